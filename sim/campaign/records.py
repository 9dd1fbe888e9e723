"""What a results database holds: its schema, its rows as values, their checks and seals.

sim/campaign/results.py opens the file and runs the queries; this module
knows the tables' shape and what each column may hold, and checks every
value read back (its type, its allowed values, the row's seal), so an
edited row becomes a clear error rather than a traceback or a wrong replay.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from dataclasses import dataclass
from typing import Any

from tlasim.protocols.errors import ConfigError
from tlasim.sim.coverage.run import RunCoverage
from tlasim.sim.kernel.simulation import OUTCOME_LIVENESS, OUTCOME_OK, OUTCOME_SAFETY

SCHEMA_VERSION = 3  # the `user_version` of a results database this tlasim writes
SEED_MAX = 2**63 - 1  # SQLite's largest INTEGER: a seed the database can hold

# Split on semicolons when created, so none may appear inside a statement or comment.
SCHEMA = """
CREATE TABLE campaigns (
    id INTEGER PRIMARY KEY,
    protocol TEXT NOT NULL,
    bug TEXT,                    -- NULL: the correct protocol
    seed_start INTEGER NOT NULL,
    seed_stop INTEGER NOT NULL,  -- exclusive, as in range()
    options TEXT NOT NULL,       -- canonical JSON of the run options
    validate TEXT NOT NULL,      -- all, failures, none or sample:N
    created TEXT NOT NULL,       -- ISO 8601, UTC
    seal TEXT                    -- hash of the row's values (NULL in rows of schema 1)
);
-- One campaign per key: a rerun of the same sweep must --resume it.
-- IFNULL because UNIQUE treats every NULL bug as distinct.
CREATE UNIQUE INDEX campaign_key
    ON campaigns (protocol, IFNULL(bug, ''), seed_start, seed_stop, options);
CREATE TABLE runs (
    campaign INTEGER NOT NULL REFERENCES campaigns (id),
    seed INTEGER NOT NULL,
    outcome TEXT NOT NULL,       -- ok, safety or liveness
    failure TEXT,                -- the broken property and message
    steps INTEGER NOT NULL,
    last_tick INTEGER NOT NULL,
    crashes INTEGER NOT NULL,
    messages_lost INTEGER NOT NULL,
    messages_duplicated INTEGER NOT NULL,
    plan TEXT NOT NULL,          -- JSON of the fault plan the run carried out
    validation TEXT NOT NULL,    -- accepted, rejected or skipped
    rejection TEXT,              -- TLC's summary, when rejected
    tlc_seconds REAL NOT NULL,
    trace_path TEXT,             -- where the trace was kept, if it was
    run_seed INTEGER,            -- a guided run's own seed, run under plan (NULL: seed, as itself)
    finished TEXT NOT NULL,      -- ISO 8601, UTC, when the parent recorded it
    shrunk_plan TEXT,            -- JSON of the shrunk fault plan, once the failure is shrunk
    shrunk_outcome TEXT,         -- the outcome under the shrunk plan
    shrunk_failure TEXT,         -- the broken property and message under the shrunk plan
    seal TEXT,                   -- hash of the row's values (NULL in rows of schema 1)
    PRIMARY KEY (campaign, seed)
) WITHOUT ROWID;
CREATE INDEX runs_failures ON runs (campaign, seed)
    WHERE outcome != 'ok' OR validation = 'rejected';
"""

# A run's spec coverage (sim/coverage), written in the transaction of its
# run. A table apart from runs, whose rows stay small, as failures are found
# by scanning them.
COVERAGE_TABLE = """
CREATE TABLE coverage (
    campaign INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    states BLOB NOT NULL,        -- the abstract spec states' 64-bit hashes, sorted, big-endian
    actions TEXT NOT NULL,       -- JSON: the actions it took, sorted
    pairs TEXT NOT NULL,         -- JSON: [node, action, that node's next action], sorted
    seal TEXT NOT NULL,          -- hash of the row's values
    PRIMARY KEY (campaign, seed),
    FOREIGN KEY (campaign, seed) REFERENCES runs (campaign, seed)
)
"""
SCHEMA += ";" + COVERAGE_TABLE

# Schema 1 lacked these; ALTER TABLE adds them when a writer opens such a file.
UPGRADE_1_TO_2 = (
    "ALTER TABLE campaigns ADD COLUMN seal TEXT",
    "ALTER TABLE runs ADD COLUMN shrunk_plan TEXT",
    "ALTER TABLE runs ADD COLUMN shrunk_outcome TEXT",
    "ALTER TABLE runs ADD COLUMN shrunk_failure TEXT",
    "ALTER TABLE runs ADD COLUMN seal TEXT",
)
# Schema 2 lacked the coverage table and guided runs: the runs it holds
# have no coverage, and each ran as its own seed.
UPGRADE_2_TO_3 = (COVERAGE_TABLE, "ALTER TABLE runs ADD COLUMN run_seed INTEGER")
# Columns a later schema added: a row without a value in them is sealed as
# it was before they existed, so older rows keep their seals.
LATER_COLUMNS = ("run_seed",)

RUN_COLUMNS = (
    "seed", "outcome", "failure", "steps", "last_tick", "crashes", "messages_lost",
    "messages_duplicated", "plan", "validation", "rejection", "tlc_seconds", "trace_path",
    "run_seed",
)
SHRUNK_COLUMNS = ("shrunk_plan", "shrunk_outcome", "shrunk_failure")
CAMPAIGN_COLUMNS = ("id", "protocol", "bug", "seed_start", "seed_stop", "options", "validate",
                    "created")
FAILED = "(r.outcome != 'ok' OR r.validation = 'rejected')"
OUTCOMES = (OUTCOME_OK, OUTCOME_SAFETY, OUTCOME_LIVENESS)
VALIDATIONS = ("accepted", "rejected", "skipped")
VALIDATE_MODES = ("all", "failures", "none")
SAMPLE_PREFIX = "sample:"


@dataclass(frozen=True, slots=True)
class ValidateMode:
    """Which runs a campaign checks with TLC.

    all: every run. failures: the runs an oracle failed. none: no run.
    sample:N: every failure, and the runs of a seeded 1-in-N sample of
    seeds, which a seed's number alone decides: a resumed or repeated
    campaign samples the same seeds.
    """

    kind: str
    every: int = 1

    def __str__(self) -> str:
        return f"{SAMPLE_PREFIX}{self.every}" if self.kind == "sample" else self.kind

    @property
    def checks_failures(self) -> bool:
        return self.kind != "none"

    def samples(self, seed: int) -> bool:
        """Whether this mode checks `seed`'s run whatever its outcome."""
        if self.kind == "all":
            return True
        if self.kind != "sample":
            return False
        digest = hashlib.blake2b(seed.to_bytes(8, "big"), digest_size=8).digest()
        return int.from_bytes(digest, "big") % self.every == 0


def parse_validate_mode(text: str) -> ValidateMode:
    """`all`, `failures`, `none` or `sample:N` (N >= 1)."""
    if text in VALIDATE_MODES:
        return ValidateMode(text)
    if text.startswith(SAMPLE_PREFIX):
        number = text[len(SAMPLE_PREFIX):]
        if number.isascii() and number.isdigit() and len(number) <= 9 and int(number) >= 1:
            return ValidateMode("sample", int(number))
    raise ConfigError(
        f"--validate {shown(text)}: expected all, failures, none or sample:N (N >= 1: every "
        "failure and a seeded 1-in-N sample of the seeds)"
    )

# What each column may hold: a type (None allowed when the type is in a
# tuple with NoneType) and, for some, the only values allowed.
_TEXT, _INT, _REAL, _HASHES = "text", "an integer", "a number", "hashes"
_COLUMN_KINDS: dict[str, tuple[str, bool, tuple[str, ...] | None]] = {
    # column: (kind, may be NULL, allowed values)
    "id": (_INT, False, None),
    "protocol": (_TEXT, False, None),
    "bug": (_TEXT, True, None),
    "seed_start": (_INT, False, None),
    "seed_stop": (_INT, False, None),
    "options": (_TEXT, False, None),
    "validate": (_TEXT, False, None),  # a ValidateMode (parse_validate_mode)
    "created": (_TEXT, False, None),
    "campaign": (_INT, False, None),
    "seed": (_INT, False, None),
    "outcome": (_TEXT, False, OUTCOMES),
    "failure": (_TEXT, True, None),
    "steps": (_INT, False, None),
    "last_tick": (_INT, False, None),
    "crashes": (_INT, False, None),
    "messages_lost": (_INT, False, None),
    "messages_duplicated": (_INT, False, None),
    "plan": (_TEXT, False, None),
    "validation": (_TEXT, False, VALIDATIONS),
    "rejection": (_TEXT, True, None),
    "tlc_seconds": (_REAL, False, None),
    "trace_path": (_TEXT, True, None),
    "run_seed": (_INT, True, None),
    "finished": (_TEXT, False, None),
    "shrunk_plan": (_TEXT, True, None),
    "shrunk_outcome": (_TEXT, True, OUTCOMES),
    "shrunk_failure": (_TEXT, True, None),
    "seal": (_TEXT, True, None),
    "states": (_HASHES, False, None),
    "actions": (_TEXT, False, None),
    "pairs": (_TEXT, False, None),
}


@dataclass(frozen=True, slots=True)
class SeedOutcome:
    """What one seed of a campaign did: one row of `runs`."""

    seed: int
    outcome: str  # ok, safety or liveness
    failure: str | None
    steps: int
    last_tick: int
    crashes: int
    messages_lost: int
    messages_duplicated: int
    plan_json: str  # the fault plan the run carried out, as JSON
    validation: str  # accepted, rejected or skipped
    rejection: str | None  # TLC's summary of the first unexplained step, when rejected
    tlc_seconds: float
    trace_path: str | None  # kept for failures and rejections
    coverage: RunCoverage | None = None  # what its run reached of the spec, when measured
    # A guided campaign's run (sim/campaign/guide.py) is run with this seed
    # under its recorded plan, given explicitly; None: the seed itself, under
    # the campaign's faults.
    run_seed: int | None = None

    @property
    def failed(self) -> bool:
        return self.outcome != OUTCOME_OK or self.validation == "rejected"


@dataclass(frozen=True, slots=True)
class Campaign:
    id: int
    protocol: str
    bug: str | None
    seeds: range
    options: str  # canonical JSON of the run options
    validate: str
    created: str

    def describe(self) -> str:
        seeds = f"--seeds {self.seeds.start}:{self.seeds.stop}"
        bug = f" --bug {self.bug}" if self.bug else ""
        return f"campaign {self.id} ({self.protocol} {seeds}{bug}{self._guided()})"

    def _guided(self) -> str:
        """` --guide MODE --guide-seed N` for a guided campaign, else nothing."""
        try:
            guide = json.loads(self.options).get("guide")
            return f" --guide {guide['mode']} --guide-seed {int(guide['seed'])}"
        except (ValueError, AttributeError, KeyError, TypeError):
            return ""


@dataclass(frozen=True, slots=True)
class ShrunkRun:
    """A failure's shrunk fault plan, and what the run did under it."""

    plan_json: str
    outcome: str
    failure: str | None


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A recorded run with its campaign: everything `tlasim repro` needs."""

    campaign: Campaign
    outcome: SeedOutcome
    shrunk: ShrunkRun | None = None
    sealed: bool = True  # False: a row of schema 1, which has no seal to check

    @property
    def failure_id(self) -> str:
        return format_failure_id(self.campaign.id, self.outcome.seed)


def format_failure_id(campaign_id: int, seed: int) -> str:
    return f"{campaign_id}:{seed}"


def parse_failure_id(text: str) -> tuple[int | None, int]:
    """`CAMPAIGN:SEED`, or a bare `SEED` when the database holds one campaign with it."""
    campaign_text, sep, seed_text = text.strip().rpartition(":")
    problem = "expected CAMPAIGN:SEED, such as 1:8812, or a seed"
    try:
        seed = int(seed_text)
        campaign = int(campaign_text) if sep else None
    except ValueError:
        seed, campaign = -1, None
    else:
        problem = f"a campaign and a seed are integers from 0 to {SEED_MAX}"
    if not 0 <= seed <= SEED_MAX or (campaign is not None and not 0 <= campaign <= SEED_MAX):
        raise ConfigError(f"failure id {shown(text)}: {problem}")
    return campaign, seed




# Every column of a row as read to check it: the seal covers all but itself.
CAMPAIGN_ROW = (*CAMPAIGN_COLUMNS, "seal")
RUN_ROW = ("campaign", *RUN_COLUMNS, "finished", *SHRUNK_COLUMNS, "seal")
COVERAGE_ROW = ("campaign", "seed", "states", "actions", "pairs", "seal")


def field_of(column: str) -> str:
    """The SeedOutcome attribute stored in `column`."""
    return "plan_json" if column == "plan" else column


def campaign_of(values: dict[str, Any]) -> Campaign:
    return Campaign(
        id=values["id"],
        protocol=values["protocol"],
        bug=values["bug"],
        seeds=range(values["seed_start"], values["seed_stop"]),
        options=values["options"],
        validate=values["validate"],
        created=values["created"],
    )


def is_real(column: str) -> bool:
    return _COLUMN_KINDS[column][0] == _REAL


def column_problem(column: str, value: Any) -> str | None:
    """What `column` should hold, when `value` is not that; None when it is."""
    kind, nullable, allowed = _COLUMN_KINDS[column]
    if value is None and nullable:
        return None
    if kind == _TEXT:
        fits = isinstance(value, str)
    elif kind == _HASHES:
        fits = isinstance(value, bytes) and len(value) % 8 == 0
    elif kind == _INT:
        fits = isinstance(value, int) and value >= 0
    else:
        fits = isinstance(value, int | float) and math.isfinite(value) and value >= 0
    if fits and column == "validate":
        try:
            parse_validate_mode(value)
        except ConfigError:
            return "all, failures, none or sample:N"
        return None
    if fits and (allowed is None or value in allowed):
        return None
    expected = {_TEXT: "text", _INT: "an integer >= 0", _REAL: "a finite number >= 0",
                _HASHES: "a blob of 8-byte hashes"}[kind]
    if allowed is not None:
        expected = "one of " + ", ".join(allowed)
    return expected + (" or NULL" if nullable else "")


def seal_of(table: str, values: dict[str, Any]) -> str:
    """A hash of a row's values (all but the seal), in column order."""
    items = [(column, value) for column, value in values.items()
             if not (value is None and column in LATER_COLUMNS)]
    text = json.dumps([table, items], separators=(",", ":"),
                      default=_blob_as_hex)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _blob_as_hex(value: Any) -> str:
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"a row holds {type(value).__name__}, which no column stores")


def coverage_columns(coverage: RunCoverage) -> dict[str, Any]:
    """A run's coverage as the coverage table's columns hold it: sorted, so
    one run gives one row, byte for byte."""
    states = sorted(coverage.states)
    return {
        "states": struct.pack(f">{len(states)}Q", *states),
        "actions": json.dumps(sorted(coverage.actions), separators=(",", ":")),
        "pairs": json.dumps(sorted(coverage.pairs), separators=(",", ":")),
    }


def coverage_from_columns(values: dict[str, Any]) -> RunCoverage | None:
    """The inverse of `coverage_columns`; None when a column does not hold
    what that one writes (the row was changed)."""
    blob = values["states"]
    try:
        actions = json.loads(values["actions"])
        pairs = json.loads(values["pairs"])
    except ValueError:
        return None
    if not (isinstance(actions, list) and all(isinstance(a, str) for a in actions)):
        return None
    if not (isinstance(pairs, list) and all(
            isinstance(p, list) and len(p) == 3 and all(isinstance(x, str) for x in p)
            for p in pairs)):
        return None
    return RunCoverage(
        frozenset(struct.unpack(f">{len(blob) // 8}Q", blob)),
        frozenset(actions),
        frozenset((p[0], p[1], p[2]) for p in pairs),
    )


def shown(value: Any, limit: int = 60) -> str:
    """A value from the file, quoted with its control characters escaped, and short."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"
