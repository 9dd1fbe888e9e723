"""Exhaustive exploration: every schedule of a protocol's cores within bounds."""
