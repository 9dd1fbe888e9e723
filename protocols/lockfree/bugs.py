"""The lock-free bug zoo: seed 000's three races (see protocols/zoo.py for what a
variant promises). Each name is the specs' value of `Bug`, and each variant is
the racy code of docs/lockfree-model.md beside the fixed code.

No fault is needed: a race needs only a schedule, and the schedule is the
seed's. The traces of every run are checked against the correct algorithm
(Bug = "none"), so TLC rejects a buggy run's trace at the step that raced.
"""

from __future__ import annotations

from tlasim.protocols.zoo import BugVariant

LAST_NODE = "last_node"
HALF_VISIBLE = "half_visible"
ABA = "aba"

QUEUE_BUGS: dict[str, BugVariant] = {
    bug.name: bug
    for bug in (
        BugVariant(
            LAST_NODE,
            "EmptyAnswerMatches, RemovedIsFront",
            "remove takes the last node with a load of tail and a later store of nullptr "
            "instead of one compare-exchange, so an append that exchanges tail in between "
            "links its node behind a node the remover frees: the element is lost",
            0,
            "none: a schedule where an append exchanges tail between the two steps",
        ),
        BugVariant(
            HALF_VISIBLE,
            "EmptyAnswerMatches",
            "empty() and remove() decide \"empty\" from head alone, and so answer \"empty\" "
            "while an append into an empty queue has exchanged tail but not yet set head",
            0,
            "none: a schedule where an observer reads head inside that window",
        ),
    )
}

STACK_BUGS: dict[str, BugVariant] = {
    bug.name: bug
    for bug in (
        BugVariant(
            ABA,
            "EmptyAnswerMatches, PoppedIsTop, TopNotFree, StackedNotFree",
            "pop's compare-exchange compares top's address bits alone, not its tag, so a pop "
            "whose top was popped, freed and reused by a push meanwhile still succeeds and "
            "installs the next it read before: elements are lost, or top points to freed memory",
            0,
            "none: a schedule where the other thread pops and pushes inside one pop",
        ),
    )
}

