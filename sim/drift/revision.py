"""The source revision of a protocol's modelled code: a hash of its files.

The trace header carries it, so a trace says which code produced it, and a
spec can record which revision it models (see `tlasim drift`, issue 6).
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from tlasim.protocols.errors import InternalError

_ROOT = Path(__file__).resolve().parents[2]


@cache
def source_revision(files: tuple[str, ...], root: Path = _ROOT) -> str:
    """The hash of `files`, named relative to `root` (a protocol's source_root)."""
    digest = hashlib.sha256()
    for rel in files:
        path = root / rel
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InternalError(f"modelled source file {rel} is missing: {exc}") from exc
        digest.update(rel.encode())
        digest.update(b"\0")
        # Line endings are normalised so a checkout on another OS hashes the same.
        digest.update(data.replace(b"\r\n", b"\n"))
        digest.update(b"\0")
    return "sha256:" + digest.hexdigest()[:16]
