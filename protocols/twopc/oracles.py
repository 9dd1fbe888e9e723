"""Two-phase commit oracles. They read the spec variables and nothing else.

Safety is checked after every step; liveness once, after every fault has
healed and the liveness bound has passed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tlasim.protocols.definition import StepInfo
from tlasim.protocols.errors import InvariantViolation

DECIDED = ("committed", "aborted")


class TwoPCOracle:
    """Atomicity, agreement and durability after every step; liveness at the end."""

    def __init__(self, txs: tuple[str, ...], rms: tuple[str, ...]) -> None:
        self.txs = txs
        self.rms = rms
        # The first decision seen for each (node, tx): durability means it never changes.
        self._decided: dict[tuple[str, str], str] = {}
        # tx -> the TM's state and the RMs' states of tx when they last passed.
        # Every check of a transaction reads only these (and `_decided`, which
        # only a state not seen before can change), so a transaction whose
        # states equal the last ones that passed passes again: most steps
        # touch one transaction, or none.
        self._passed: dict[str, tuple[str, Mapping[str, str]]] = {}

    def check_step(self, spec_vars: Mapping[str, Any], step: StepInfo | None = None) -> None:
        tm_state = spec_vars["tmState"]
        rm_state = spec_vars["rmState"]
        for tx in self.txs:
            states = rm_state[tx]
            checked = (tm_state[tx], states)
            if checked == self._passed.get(tx):
                continue
            # Durability first: a lost decision is the root cause of the
            # agreement failure it then shows as.
            self._check_durable("tm", tx, tm_state[tx])
            for rm in self.rms:
                self._check_durable(rm, tx, states[rm])
            committed = [rm for rm in self.rms if states[rm] == "committed"]
            aborted = [rm for rm in self.rms if states[rm] == "aborted"]
            if committed and aborted:
                raise InvariantViolation(
                    f"atomicity: {tx} is committed at {', '.join(committed)} "
                    f"and aborted at {', '.join(aborted)}"
                )
            decision = tm_state[tx]
            if committed and decision != "committed":
                raise InvariantViolation(
                    f"agreement: {tx} is committed at {', '.join(committed)} "
                    f"but the TM's decision is {decision}"
                )
            if aborted and decision == "committed":
                raise InvariantViolation(
                    f"agreement: {tx} is aborted at {', '.join(aborted)} "
                    f"but the TM's decision is committed"
                )
            self._passed[tx] = checked

    def _check_durable(self, node: str, tx: str, state: str) -> None:
        if state not in DECIDED:
            if (node, tx) in self._decided:
                raise InvariantViolation(
                    f"durability: {node} decided {self._decided[node, tx]} on {tx} "
                    f"and later shows {state}"
                )
            return
        first = self._decided.setdefault((node, tx), state)
        if first != state:
            raise InvariantViolation(
                f"durability: {node} decided {first} on {tx} and later shows {state}"
            )

    def check_liveness(self, spec_vars: Mapping[str, Any]) -> str | None:
        """None when every transaction is decided and known to every live RM."""
        tm_state = spec_vars["tmState"]
        rm_state = spec_vars["rmState"]
        rm_up = spec_vars["rmUp"]
        if not spec_vars["tmUp"]:
            return "liveness: the TM is still down after every fault healed"
        for tx in self.txs:
            decision = tm_state[tx]
            if decision not in DECIDED:
                return f"liveness: {tx} is still {decision} at the TM"
            for rm in self.rms:
                if rm_up[rm] and rm_state[tx][rm] != decision:
                    return (
                        f"liveness: {rm} shows {tx} as {rm_state[tx][rm]} "
                        f"but the TM decided {decision}"
                    )
        return None
