"""A node host: runs one protocol core, its timers and its disk, and crashes it.

The host is where "volatile" gets its meaning: a crash drops the core
object, its timers and its unsynced records; a restart builds a fresh core
and hands it the synced log through `Recover`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tlasim.protocols.base import Core
from tlasim.sim.kernel.disk import Disk


class NodeHost:
    __slots__ = ("core", "crashes", "disk", "node_id", "timers", "up", "view")

    def __init__(self, node_id: str, core: Core) -> None:
        self.node_id = node_id
        self.core: Core | None = core
        self.disk = Disk()
        self.up = True
        self.crashes = 0
        # timer name -> the generation that may fire; a re-armed or cancelled
        # timer's old generation finds no match and is ignored.
        self.timers: dict[str, int] = {}
        # The node's spec variables as of its last traced step. For a crashed
        # node: what it will recover to.
        self.view: Mapping[str, Any] = core.view()

    def live_core(self) -> Core:
        if self.core is None:
            raise AssertionError(f"{self.node_id} has no core while down")
        return self.core
