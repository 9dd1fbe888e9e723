"""Bug variants: what each protocol's bug zoo promises the tool finds.

Each variant is a promise: a swarm sweep finds it through an oracle, and TLC
rejects the failing trace. A protocol's cores read `config.bug` at exactly
the place the variant changes, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tlasim.protocols.errors import ConfigError


@dataclass(frozen=True, slots=True)
class BugVariant:
    name: str
    breaks: str  # the property or properties that fail
    description: str
    # The most faults a shrunk failing plan needs, and what they are: the
    # quality tests hold shrinking to this.
    minimal_faults: int
    minimal_plan: str


def check_bug(bugs: Mapping[str, BugVariant], protocol: str, name: str | None) -> str | None:
    """`name` if it names one of `bugs` (or is None); else a ConfigError naming both."""
    if name is not None and name not in bugs:
        known = ", ".join(bugs) or "none (it has no bug variants)"
        raise ConfigError(f"unknown {protocol} bug {name!r}; known: {known}")
    return name
