"""Fault options and swarm generation. Never imports sim/."""
