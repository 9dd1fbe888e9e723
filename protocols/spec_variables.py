"""A spec's variables and their types, read from the module text: what a
protocol definition's `variable_types` would restate.

Theory of operation: the names come from the VARIABLE(S) declarations, in
order, after those of the local modules it EXTENDS (in the same folder);
each one's type is the `v \\in T` conjunct of the spec's `TypeOK`, as written
there (`v \\subseteq T` is `SUBSET T`; `BagToSet(v) \\subseteq T` a bag of T),
or "" when TypeOK does not say. The types are what a trace header
shows a reader; the validator and `tlasim drift` compare only the names and
their order with SANY's parse of the spec.
"""

from __future__ import annotations

import re
from pathlib import Path

from tlasim.protocols.errors import SpecError
from tlasim.protocols.trace_template import module_tokens

__all__ = ["find_module", "read_spec_variables"]

_TYPE_INVARIANTS = ("TypeOK", "TypeOk", "TypeInvariant", "TypeInv")
_COMMENT = re.compile(r"\\\*[^\n]*|\(\*.*?\*\)", re.DOTALL)
_CONJUNCT = re.compile(r"/\\\s*(.+?)\s*(?=/\\|\Z)", re.DOTALL)
_MEMBER = re.compile(r"([A-Za-z_]\w*)\s*\\in\s*(.+)", re.DOTALL)
_SUBSET = re.compile(r"([A-Za-z_]\w*)\s*\\subseteq\s*(.+)", re.DOTALL)
# A bag, as Bags writes its type: IsABag(v) /\ BagToSet(v) \subseteq T.
_BAG_OF = re.compile(r"BagToSet\(\s*([A-Za-z_]\w*)\s*\)\s*\\subseteq\s*(.+)", re.DOTALL)


def find_module(spec_module: str, spec_dirs: tuple[Path, ...] | list[Path]) -> Path:
    """`<spec_module>.tla` under the first folder (searched recursively) holding it."""
    for folder in spec_dirs:
        found = sorted(Path(folder).rglob(f"{spec_module}.tla"))
        if len(found) > 1:
            raise SpecError(f"{spec_module}.tla is in more than one place under {folder}")
        if found:
            return found[0]
    raise SpecError(f"spec module {spec_module}.tla not found under "
                    f"{', '.join(map(str, spec_dirs))}")


def _declared(path: Path, seen: frozenset[str]) -> tuple[list[str], str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise SpecError(f"{path}: cannot read the spec: {exc}") from None
    name, tokens = module_tokens(text, str(path))
    names: list[str] = []
    for i, (kind, word) in enumerate(tokens):
        if kind == "word" and word == "EXTENDS":
            j = i + 1
            while j < len(tokens) and tokens[j][0] == "word":
                local = path.with_name(f"{tokens[j][1]}.tla")
                if local.is_file() and tokens[j][1] not in seen:
                    names += _declared(local, seen | {name})[0]
                j += 2 if j + 1 < len(tokens) and tokens[j + 1][1] == "," else 1
                if j - 1 < len(tokens) and tokens[j - 1][1] != ",":
                    break
        if kind == "word" and word in ("VARIABLE", "VARIABLES"):
            j = i + 1
            while j < len(tokens) and tokens[j][0] == "word":
                names.append(tokens[j][1])
                if j + 1 < len(tokens) and tokens[j + 1][1] == ",":
                    j += 2
                else:
                    break
    return names, text


def _types(text: str) -> dict[str, str]:
    """Each `v \\in T` conjunct of the type invariant, T with its spacing tidied."""
    plain = _COMMENT.sub(" ", text)
    for invariant in _TYPE_INVARIANTS:
        start = re.search(rf"^{invariant}\s*==", plain, re.MULTILINE)
        if start is None:
            continue
        # The definition runs to the next one that starts a line, or the module's end.
        end = re.search(r"^(?=[A-Za-z_]\w*(\(.*?\))?\s*==|={4,}|-{4,})", plain[start.end():],
                        re.MULTILINE)
        body = plain[start.end(): start.end() + end.start() if end else len(plain)]
        if not body.lstrip().startswith("/\\"):
            body = "/\\ " + body
        types: dict[str, str] = {}
        for conjunct in _CONJUNCT.findall(body):
            conjunct = " ".join(conjunct.split())
            if (m := _BAG_OF.fullmatch(conjunct)) is not None:
                types[m.group(1)] = f"[{m.group(2)} -> Nat \\ {{0}}] (a bag)"
            elif (m := _SUBSET.fullmatch(conjunct)) is not None:
                types[m.group(1)] = f"SUBSET {m.group(2)}"
            elif (m := _MEMBER.fullmatch(conjunct)) is not None:
                types[m.group(1)] = m.group(2)
        return types
    return {}


def read_spec_variables(path: Path) -> dict[str, str]:
    """The spec's variables in declaration order, each with its TypeOK type."""
    names, text = _declared(Path(path), frozenset())
    if not names:
        raise SpecError(f"{path}: declares no VARIABLES")
    types = _types(text)
    return {name: types.get(name, "") for name in dict.fromkeys(names)}
