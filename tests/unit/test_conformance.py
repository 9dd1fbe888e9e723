"""Conformance profiles: one step seen from one node, equal across the spec and the code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tlasim.protocols.errors import ConfigError
from tlasim.sim.conformance.check import compare
from tlasim.sim.conformance.model import Explained, read_model
from tlasim.sim.conformance.profiles import NET_ROLE, Ownership, Profiler, normalise
from tlasim.sim.conformance.spec_side import SideProfiles, _read_dot, _unescape
from tlasim.tracing.tla.parse import ModelValue, parse_state
from tlasim.tracing.values import Record

OWNERS = Ownership.parse(
    {"tmState": "tm", "rmState": "[*][node]", "rmUp": "[node]", "msgs": "network"}, "test"
)
PROFILER = Profiler(OWNERS, ("tm", "r1", "r2"), (("r1", "r2"),))


def state(tm: str, r1: str, r2: str, *, up2: bool = True, msgs: object = None) -> dict:
    return {
        "tmState": {"t1": tm},
        "rmState": {"t1": {"r1": r1, "r2": r2}},
        "rmUp": {"r1": True, "r2": up2},
        "msgs": {} if msgs is None else msgs,
    }


def test_spec_values_and_code_values_normalise_alike() -> None:
    parsed = parse_state('/\\ x = (r1 :> TRUE @@ r2 :> FALSE)\n/\\ y = << >>\n/\\ z = {a, b}')
    assert normalise(parsed["x"]) == normalise({"r1": True, "r2": False})
    # TLC prints an empty bag or function as << >>; the code has an empty dict.
    assert normalise(parsed["y"]) == normalise(())
    assert normalise(parsed["z"]) == normalise(frozenset({"a", "b"}))
    assert normalise(ModelValue("a")) == "a"
    assert normalise([1, 2]) == normalise({1: 1, 2: 2})  # a sequence is a function on 1..n
    assert normalise(True) != normalise(1)


def test_a_node_sees_only_its_own_part() -> None:
    s = state("preparing", "prepared", "working", up2=False)
    assert OWNERS.local(s, "r2") == (("rmState", normalise({"t1": "working"})),
                                     ("rmUp", normalise(False)))
    assert OWNERS.local(s, "tm") == (("tmState", normalise({"t1": "preparing"})),)


def test_the_same_step_of_either_interchangeable_node_is_one_profile() -> None:
    before = state("preparing", "working", "working")
    by_r1 = set(PROFILER.profiles("RMRcvPrepare", before, state("preparing", "prepared",
                                                                  "working")))
    by_r2 = set(PROFILER.profiles("RMRcvPrepare", before, state("preparing", "working",
                                                                  "prepared")))
    assert by_r1 == by_r2 and len(by_r1) == 1
    (profile,) = by_r1
    assert profile.role == "r*"
    assert "working" in profile.render() and "prepared" in profile.render()


def test_a_step_that_changes_no_node_is_profiled_by_its_messages_and_who_they_name() -> None:
    m1 = Record({"type": "Prepare", "rm": "r1"})
    before = state("preparing", "working", "working")
    after = state("preparing", "working", "working", msgs={m1: 1})
    (profile,) = PROFILER.profiles("TMSendPrepare", before, after)
    assert profile.role == NET_ROLE
    assert profile.after == ((), (normalise(m1),))
    assert profile.before == (("r*", OWNERS.local(before, "r1")),)
    m2 = Record({"type": "Prepare", "rm": "r2"})
    after2 = state("preparing", "working", "working", msgs={m2: 1})
    assert set(PROFILER.profiles("TMSendPrepare", before, after2)) == {profile}


@pytest.mark.parametrize("declared, message", [
    ({"x": 3}, "node id, a path"),
    ({"x": "[node][node]"}, "names [node] once"),
    ({"x": "[key]"}, "made of"),
    ({"x": "network", "y": "network"}, "two network variables"),
])
def test_a_bad_ownership_declaration_is_named(declared: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        Ownership.parse(declared, "model.json")


def write_model(tmp_path: Path, **changes: object) -> Path:
    data = {"schema": 1, "spec": "S", "model": {"module": "MCS"}, "nodes": {"x": "[node]"}}
    data.update(changes)
    path = tmp_path / "S.conformance.json"
    path.write_text(json.dumps(data))
    return path


def test_a_model_is_read_with_its_defaults(tmp_path: Path) -> None:
    model = read_model(write_model(tmp_path, explained=[{"action": "A", "why": "because"}]))
    assert model.specification == "Spec" and model.constraints == ()
    assert model.explained == (Explained(("A",), "", "because"),)


def test_a_model_may_set_its_own_default_effort(tmp_path: Path) -> None:
    assert read_model(write_model(tmp_path)).budget == {}
    budget = {"seeds": 9000, "explore_workloads": 4, "chase_states": 0}
    assert read_model(write_model(tmp_path, budget=budget)).budget == budget


def test_one_explanation_may_name_several_actions(tmp_path: Path) -> None:
    model = read_model(write_model(tmp_path, explained=[
        {"action": ["A", "B"], "contains": "x=1", "why": "one reason for both"}]))
    (why,) = model.explained
    assert why.covers("A", "x=1") and why.covers("B", "y=2, x=1")
    assert not why.covers("C", "x=1") and not why.covers("A", "x=2")


@pytest.mark.parametrize("changes, message", [
    ({"schema": 2}, "schema must be 1"),
    ({"extra": 1}, "unknown keys"),
    ({"nodes": {}}, "nodes must name"),
    ({"explained": [{"action": "A"}]}, "why must be"),
    ({"explained": [{"action": [], "why": "w"}]}, "action must be"),
    ({"explained": [{"action": ["A", 3], "why": "w"}]}, "action must be"),
    ({"explained": [{"action": "A", "why": "w", "contains": 3}]}, "contains must be"),
    ({"model": {"module": "M", "constraints": "Bound"}}, "list of operator names"),
    ({"budget": {"runs": 5}}, "budget has unknown keys"),
    ({"budget": {"seeds": -1}}, "budget.seeds must be an integer of at least 0"),
    ({"budget": {"explore_workloads": 0}}, "explore_workloads must be an integer of at least 1"),
    ({"budget": {"seeds": True}}, "budget.seeds must be an integer"),
    ({"budget": {"chase_states": -5}}, "chase_states must be an integer of at least 0"),
    ({"budget": [1]}, "budget must be an object"),
])
def test_a_bad_model_is_refused_with_its_fault(tmp_path: Path, changes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        read_model(write_model(tmp_path, **changes))


def test_a_missing_or_malformed_model_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        read_model(tmp_path / "nothing.conformance.json")
    bad = tmp_path / "bad.conformance.json"
    bad.write_text('{"schema": 1, "schema": 1}')
    with pytest.raises(ConfigError):
        read_model(bad)


def side(*steps: tuple[str, dict, dict]) -> SideProfiles:
    found = SideProfiles()
    for action, before, after in steps:
        found.by_action[action].update(PROFILER.profiles(action, before, after))
    return found


def test_what_the_spec_does_and_the_code_never_does_is_reported_unless_explained() -> None:
    working = state("preparing", "working", "working")
    prepared = state("preparing", "prepared", "working")
    aborted_late = state("preparing", "aborted", "working")
    spec = side(("RMRcvPrepare", working, prepared), ("RMChooseToAbort", prepared, aborted_late))
    code = side(("RMRcvPrepare", working, prepared))
    actions, beyond, unused = compare(spec, code, ())
    loose = {a.action: a for a in actions}
    assert loose["RMRcvPrepare"].unexplained == ()
    assert len(loose["RMChooseToAbort"].unexplained) == 1
    assert beyond == 0 and unused == ()
    why = Explained(("RMChooseToAbort",), '"prepared"', "a reason")
    stale = Explained(("RMRcvPrepare",), "no such text", "old")
    actions, _, unused = compare(spec, code, (why, stale))
    assert all(not a.unexplained for a in actions)
    assert unused == (stale,)
    both = Explained(("RMChooseToAbort", "RMRcvPrepare"), '"prepared"', "a reason")
    _, _, unused = compare(spec, code, (both,))
    assert unused == (Explained(("RMRcvPrepare",), '"prepared"', "a reason"),)


def test_a_label_tlc_gives_a_whole_quantifier_stands_for_the_actions_it_never_names() -> None:
    # TLC labels `\E m \in DOMAIN msgs : NetLose(m) \/ ...` steps with `Next`.
    m = Record({"type": "Prepare", "rm": "r1"})
    quiet = state("preparing", "working", "working")
    with_m = state("preparing", "working", "working", msgs={m: 1})
    spec = side(("Next", with_m, quiet))
    code = side(("NetLose", with_m, quiet))
    actions, beyond, _ = compare(spec, code, ())
    (only,) = actions
    assert only.action == "NetLose (TLC: Next)" and only.unexplained == () and beyond == 0


def test_tlc_dot_labels_are_unescaped() -> None:
    assert _unescape(r'/\\ x = \"a\\\"b\"\n/\\ y = 1') == '/\\ x = "a\\"b"\n/\\ y = 1'


def test_a_tlc_state_graph_is_read_into_states_and_labelled_steps(tmp_path: Path) -> None:
    owners = Ownership.parse({"x": "[node]"}, "test")
    profiler = Profiler(owners, ("a", "b"), (("a", "b"),))
    dot = tmp_path / "states.dot"
    dot.write_text(
        "strict digraph DiskGraph {\n"
        '1 [label="/\\\\ x = (a :> 0 @@ b :> 0)\\n/\\\\ y = \\"q\\\\\\"\\"",style = filled]\n'
        '1 -> 2 [label="Inc",color="black",fontcolor="black"];\n'
        '2 [label="/\\\\ x = (a :> 1 @@ b :> 0)\\n/\\\\ y = \\"q\\\\\\"\\""];\n'
        '1 -> 3 [label="Inc",color="black",fontcolor="black"];\n'
        '3 [label="/\\\\ x = (a :> 0 @@ b :> 1)\\n/\\\\ y = \\"q\\\\\\"\\""];\n'
        "}\n"
    )
    side = _read_dot(dot, profiler)
    assert side.states == 3 and side.steps == 2
    (profile,) = side.by_action["Inc"]  # a's step and b's are one profile
    assert profile.role == "node*"
    assert profile.before == (("x", 0),) and profile.after == (("x", 1),)


def test_a_message_type_may_name_the_fields_that_say_whom_it_concerns() -> None:
    owners = Ownership.parse({"up": "[node]", "msgs": "network"}, "test",
                             {"Route": ["coord", "field:c"]})
    profiler = Profiler(owners, ("coord", "s1", "c1"), ())
    route = Record({"type": "Route", "c": "c1", "routing": Record({"k1": "s1"})})
    other = Record({"type": "Put", "dst": "s1", "id": Record({"c": "c1"})})
    before = {"up": {"coord": True, "s1": True, "c1": True}, "msgs": {}}
    roles = {p.before[0][0] for p in profiler.profiles("X", before, {**before,
                                                                     "msgs": {route: 1}})}
    assert roles == {"coord", "c1"}  # not s1, which only the routing table names
    roles = {p.before[0][0] for p in profiler.profiles("X", before, {**before,
                                                                     "msgs": {other: 1}})}
    assert roles == {"s1", "c1"}  # undeclared: every node it names


def test_a_send_is_seen_from_its_sender_and_a_receipt_from_its_receiver() -> None:
    owners = Ownership.parse({"up": "[node]", "msgs": "network"}, "test",
                             {"Ping": {"from": ["field:src"], "to": ["field:dst"]}})
    profiler = Profiler(owners, ("a", "b"), ())
    ping = Record({"type": "Ping", "src": "a", "dst": "b"})
    quiet = {"up": {"a": True, "b": True}, "msgs": {}}
    sent = {**quiet, "msgs": {ping: 1}}
    (send,) = profiler.profiles("Send", quiet, sent)
    (take,) = profiler.profiles("Take", sent, quiet)
    assert send.before[0][0] == "a" and take.before[0][0] == "b"
    with pytest.raises(ConfigError, match="from and to"):
        Ownership.parse({"msgs": "network"}, "test", {"Ping": {"by": ["a"]}})


def test_a_step_of_the_network_is_profiled_by_its_messages_alone() -> None:
    owners = Ownership.parse({"up": "[node]", "msgs": "network"}, "test")
    profiler = Profiler(owners, ("a", "b"), (), network_actions=("Lose",))
    ping = Record({"type": "Ping", "dst": "a"})
    with_ping = {"up": {"a": True, "b": True}, "msgs": {ping: 1}}
    down = {"up": {"a": False, "b": True}, "msgs": {ping: 1}}
    lost = [set(profiler.profiles("Lose", s, {**s, "msgs": {}})) for s in (with_ping, down)]
    assert lost[0] == lost[1] and next(iter(lost[0])).before == ()
