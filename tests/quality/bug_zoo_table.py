"""The bug zoo's variants and what each documents, shared by the bug-zoo and
explorer quality tests."""

from __future__ import annotations

from tlasim.protocols import PROTOCOLS

VARIANTS = [(name, bug) for name, p in sorted(PROTOCOLS.items()) for bug in sorted(p.bugs)]


def documented(protocol: str, bug: str, failure: str) -> bool:
    """Whether `failure` names a property the variant documents as broken."""
    breaks = PROTOCOLS[protocol].bugs[bug].breaks
    return failure.split(":")[0] in [p.strip() for p in breaks.split(",")]
