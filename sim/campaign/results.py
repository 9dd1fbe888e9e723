"""The results database: one SQLite file a campaign writes as its seeds finish.

Theory of operation. Only the campaign's own process writes here; workers
compute outcomes and hand them back. Each finished batch of seeds is one
transaction, so after a SIGKILL at any moment every seed is either recorded
in full or not at all, and a resumed campaign reruns exactly the seeds that
are missing. The primary key (campaign, seed) makes a second row for a seed
impossible rather than merely unlikely.

Durability. The file is in WAL mode with `synchronous=NORMAL`. A commit
appends its pages to the WAL with write(2) before it returns, so once the
campaign process dies, however it dies, the kernel already holds every
committed batch; SIGKILL needs nothing more. What NORMAL gives up against
FULL is an fsync per commit: after a power loss or an OS crash the last few
batches may be missing (never half-written, and the file stays consistent),
and a resume reruns them. A seed's run is deterministic, so the rerun records
the very outcome that was lost. FULL would buy protection from power loss
that a simulation campaign does not need, at one fsync per batch.

Identity. A file is ours when its `application_id` is APPLICATION_ID, and its
`user_version` is the schema version. A file that is not SQLite, belongs to
another application, has a newer schema or is damaged raises ConfigError
before anything is written to it, so a mistyped `--db` never harms a file.

Failure ids are `CAMPAIGN:SEED`, such as `1:8812`. Unlike a rowid they mean
something to a reader, survive VACUUM and copying rows between files, and
say which run to replay without looking anything up.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from protocols.errors import ConfigError
from sim.kernel.simulation import OUTCOME_OK

APPLICATION_ID = 0x544C4153  # "TLAS": marks a SQLite file as a tlasim results database
SCHEMA_VERSION = 1
SQLITE_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite 3 file
BUSY_TIMEOUT_SECONDS = 30.0  # how long a reader or a second writer waits for a lock

# Split on semicolons when created, so none may appear inside a statement or comment.
SCHEMA = """
CREATE TABLE campaigns (
    id INTEGER PRIMARY KEY,
    protocol TEXT NOT NULL,
    bug TEXT,                    -- NULL: the correct protocol
    seed_start INTEGER NOT NULL,
    seed_stop INTEGER NOT NULL,  -- exclusive, as in range()
    options TEXT NOT NULL,       -- canonical JSON of the run options
    validate TEXT NOT NULL,      -- all, failures or none
    created TEXT NOT NULL        -- ISO 8601, UTC
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
    finished TEXT NOT NULL,      -- ISO 8601, UTC, when the parent recorded it
    PRIMARY KEY (campaign, seed)
) WITHOUT ROWID;
CREATE INDEX runs_failures ON runs (campaign, seed)
    WHERE outcome != 'ok' OR validation = 'rejected';
"""

RUN_COLUMNS = (
    "seed", "outcome", "failure", "steps", "last_tick", "crashes", "messages_lost",
    "messages_duplicated", "plan", "validation", "rejection", "tlc_seconds", "trace_path",
)
CAMPAIGN_COLUMNS = ("id", "protocol", "bug", "seed_start", "seed_stop", "options", "validate",
                    "created")
FAILED = "(r.outcome != 'ok' OR r.validation = 'rejected')"


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
        return f"campaign {self.id} ({self.protocol} {seeds}{bug})"


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A recorded run with its campaign: everything `tlasim repro` needs."""

    campaign: Campaign
    outcome: SeedOutcome

    @property
    def failure_id(self) -> str:
        return format_failure_id(self.campaign.id, self.outcome.seed)


def format_failure_id(campaign_id: int, seed: int) -> str:
    return f"{campaign_id}:{seed}"


def parse_failure_id(text: str) -> tuple[int | None, int]:
    """`CAMPAIGN:SEED`, or a bare `SEED` when the database holds one campaign with it."""
    campaign_text, sep, seed_text = text.strip().rpartition(":")
    try:
        seed = int(seed_text)
        campaign = int(campaign_text) if sep else None
    except ValueError:
        raise ConfigError(
            f"failure id {text!r}: expected CAMPAIGN:SEED, such as 1:8812, or a seed"
        ) from None
    return campaign, seed


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ResultsDB:
    """A tlasim results database, opened or created at `path`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        _check_file(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: transactions are begun and committed
            # explicitly below, never implicitly by the sqlite3 module.
            self._conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None
            )
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"results database {self.path}: cannot open: {exc}") from None
        try:
            with self._guard():
                self._claim()
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
                self._conn.execute("PRAGMA foreign_keys=ON")
        except BaseException:
            self._conn.close()
            raise

    # ---- opening ----

    def _identity(self) -> tuple[int, int, list[str]]:
        app_id = self._conn.execute("PRAGMA application_id").fetchone()[0]
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        tables = [
            row[0]
            for row in self._conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        return app_id, version, tables

    def _claim(self) -> None:
        """Accept a tlasim database, create one in an empty file, refuse anything else."""
        app_id, version, tables = self._identity()
        if app_id == 0 and version == 0 and not tables:
            # Re-read inside a write transaction: another campaign may have
            # created the schema since, and must not be created twice.
            with self._transaction():
                app_id, version, tables = self._identity()
                if app_id == 0 and version == 0 and not tables:
                    # One statement at a time: executescript() would commit
                    # the open transaction first and give up the lock.
                    for statement in SCHEMA.split(";"):
                        if statement.strip():
                            self._conn.execute(statement)
                    self._conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                    return
        if app_id != APPLICATION_ID:
            listing = ", ".join(tables) if tables else "none"
            raise ConfigError(
                f"{self.path} is not a tlasim results database: it is a SQLite database "
                f"of something else (application_id {app_id}, tables: {listing}); "
                "it was left untouched, pass another --db"
            )
        if version > SCHEMA_VERSION:
            raise ConfigError(
                f"{self.path} was written by a newer tlasim (results schema {version}; "
                f"this tlasim reads schema {SCHEMA_VERSION}); upgrade tlasim or pass another --db"
            )
        missing = {"campaigns", "runs"} - set(tables)
        if version < SCHEMA_VERSION or missing:
            raise ConfigError(
                f"{self.path} is a damaged tlasim results database (schema {version}, "
                f"missing tables: {', '.join(sorted(missing)) or 'none'})"
            )

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Turn SQLite's errors about the file into a ConfigError that names it."""
        try:
            yield
        except sqlite3.IntegrityError:
            raise
        except sqlite3.OperationalError as exc:
            # Locked, unreadable, read-only or out of space: the file may be fine.
            raise ConfigError(f"results database {self.path}: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"{self.path} is not a tlasim results database, or it is damaged "
                f"(SQLite: {exc}); it was left as it was"
            ) from None

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        # IMMEDIATE takes the write lock up front, so two writers queue on
        # the busy timeout instead of failing halfway through a transaction.
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ResultsDB:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ---- campaigns ----

    def open_campaign(
        self,
        protocol: str,
        bug: str | None,
        seeds: range,
        options: str,
        validate: str,
        *,
        resume: bool,
    ) -> Campaign:
        """The campaign with this key: found when resuming, created when new.

        Without `resume`, an existing campaign with the same key is an error:
        silently continuing would hide that the user meant a fresh sweep, and
        starting over would need a second row per seed. With `resume`, the
        validate mode must match, or finished and new seeds would have been
        checked differently.
        """
        if seeds.step != 1:
            raise ConfigError(f"seed range {seeds}: a campaign sweeps consecutive seeds")
        with self._guard(), self._transaction():
            found = self._find_campaign(protocol, bug, seeds, options)
            if found is None:
                cursor = self._conn.execute(
                    "INSERT INTO campaigns (protocol, bug, seed_start, seed_stop, options,"
                    " validate, created) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (protocol, bug, seeds.start, seeds.stop, options, validate, _now()),
                )
                campaign_id = cursor.lastrowid
                assert campaign_id is not None
                return self.campaign(campaign_id)
        if not resume:
            done = len(self.finished_seeds(found.id))
            raise ConfigError(
                f"{self.path} already holds {found.describe()}, {done} of "
                f"{len(seeds)} seeds finished; pass --resume to continue it, "
                "or another --db to start afresh"
            )
        if found.validate != validate:
            raise ConfigError(
                f"{found.describe()} in {self.path} was started with --validate "
                f"{found.validate}; resume it with the same mode, or pass another --db"
            )
        return found

    def _find_campaign(
        self, protocol: str, bug: str | None, seeds: range, options: str
    ) -> Campaign | None:
        row = self._conn.execute(
            f"SELECT {', '.join(CAMPAIGN_COLUMNS)} FROM campaigns WHERE protocol = ?"
            " AND IFNULL(bug, '') = IFNULL(?, '') AND seed_start = ? AND seed_stop = ?"
            " AND options = ?",
            (protocol, bug, seeds.start, seeds.stop, options),
        ).fetchone()
        return None if row is None else _campaign(row)

    def campaign(self, campaign_id: int) -> Campaign:
        with self._guard():
            row = self._conn.execute(
                f"SELECT {', '.join(CAMPAIGN_COLUMNS)} FROM campaigns WHERE id = ?",
                (campaign_id,),
            ).fetchone()
        if row is None:
            raise ConfigError(f"{self.path} holds no campaign {campaign_id}")
        return _campaign(row)

    def campaigns(self) -> list[Campaign]:
        with self._guard():
            rows = self._conn.execute(
                f"SELECT {', '.join(CAMPAIGN_COLUMNS)} FROM campaigns ORDER BY id"
            ).fetchall()
        return [_campaign(row) for row in rows]

    # ---- runs ----

    def record(self, campaign_id: int, outcomes: Sequence[SeedOutcome]) -> None:
        """Commit a finished batch: all of its seeds, or (killed midway) none."""
        finished = _now()
        rows = [
            (campaign_id, *(getattr(o, _field(c)) for c in RUN_COLUMNS), finished)
            for o in outcomes
        ]
        placeholders = ", ".join("?" * (len(RUN_COLUMNS) + 2))
        try:
            with self._guard(), self._transaction():
                self._conn.executemany(
                    f"INSERT INTO runs (campaign, {', '.join(RUN_COLUMNS)}, finished)"
                    f" VALUES ({placeholders})",
                    rows,
                )
        except sqlite3.IntegrityError as exc:
            seeds = ", ".join(str(o.seed) for o in outcomes)
            raise ConfigError(
                f"{self.path}: a seed of campaign {campaign_id} among {seeds} is already "
                f"recorded ({exc}); is another campaign resuming the same one?"
            ) from None

    def finished_seeds(self, campaign_id: int) -> set[int]:
        with self._guard():
            rows = self._conn.execute(
                "SELECT seed FROM runs WHERE campaign = ?", (campaign_id,)
            ).fetchall()
        return {row[0] for row in rows}

    def outcomes(self, campaign_id: int) -> list[SeedOutcome]:
        """Every recorded seed of a campaign, in seed order."""
        with self._guard():
            rows = self._conn.execute(
                f"SELECT {', '.join(RUN_COLUMNS)} FROM runs WHERE campaign = ? ORDER BY seed",
                (campaign_id,),
            ).fetchall()
        return [_outcome(row) for row in rows]

    def failures(self, campaign_id: int | None = None) -> list[RunRecord]:
        """Failed or rejected runs, of one campaign or of all, by campaign and seed."""
        where = FAILED + ("" if campaign_id is None else " AND r.campaign = ?")
        params: tuple[Any, ...] = () if campaign_id is None else (campaign_id,)
        return self._records(where, params)

    def run(self, failure_id: str) -> RunRecord:
        """The run a failure id names (see `parse_failure_id`)."""
        campaign_id, seed = parse_failure_id(failure_id)
        if campaign_id is None:
            found = self._records("r.seed = ?", (seed,))
        else:
            found = self._records("r.campaign = ? AND r.seed = ?", (campaign_id, seed))
        if len(found) == 1:
            return found[0]
        if not found:
            raise ConfigError(f"{self.path} holds no run {failure_id!r}")
        choices = ", ".join(r.failure_id for r in found)
        raise ConfigError(
            f"{self.path}: seed {seed} was run by several campaigns; name one of {choices}"
        )

    def _records(self, where: str, params: tuple[Any, ...]) -> list[RunRecord]:
        columns = [f"c.{c}" for c in CAMPAIGN_COLUMNS] + [f"r.{c}" for c in RUN_COLUMNS]
        with self._guard():
            rows = self._conn.execute(
                f"SELECT {', '.join(columns)} FROM runs AS r"
                f" JOIN campaigns AS c ON c.id = r.campaign WHERE {where}"
                " ORDER BY r.campaign, r.seed",
                params,
            ).fetchall()
        split = len(CAMPAIGN_COLUMNS)
        return [RunRecord(_campaign(row[:split]), _outcome(row[split:])) for row in rows]


def _field(column: str) -> str:
    """The SeedOutcome attribute stored in `column`."""
    return "plan_json" if column == "plan" else column


def _campaign(row: Sequence[Any]) -> Campaign:
    values = dict(zip(CAMPAIGN_COLUMNS, row, strict=True))
    return Campaign(
        id=values["id"],
        protocol=values["protocol"],
        bug=values["bug"],
        seeds=range(values["seed_start"], values["seed_stop"]),
        options=values["options"],
        validate=values["validate"],
        created=values["created"],
    )


def _outcome(row: Sequence[Any]) -> SeedOutcome:
    return SeedOutcome(**{_field(c): v for c, v in zip(RUN_COLUMNS, row, strict=True)})


def _check_file(path: Path) -> None:
    """Refuse, before SQLite opens it, a path that cannot be a results database."""
    if path.is_dir():
        raise ConfigError(f"results database {path}: is a directory")
    try:
        with path.open("rb") as stream:
            head = stream.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ConfigError(f"results database {path}: cannot read: {exc}") from None
    # An empty file is an empty SQLite database, which is ours to fill.
    if head and head != SQLITE_MAGIC:
        raise ConfigError(
            f"{path} is not a tlasim results database (not a SQLite file); "
            "it was left untouched, pass another --db"
        )
