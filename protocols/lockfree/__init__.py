"""Seed 000's lock-free queue and Treiber stack: threads as cores over a shared memory."""
