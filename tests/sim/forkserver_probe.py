"""A function for a process the fork server starts; imports nothing of tlasim."""

import sys


def imported(name: str) -> bool:
    """Whether this process had imported module `name` (before running this)."""
    return name in sys.modules
