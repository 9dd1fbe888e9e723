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
Only a regular file is opened (never a FIFO or a device), and a reader
(`readonly=True`: `repro`, `failures`) opens it read-only, so it never
creates or changes one. A schema 1 file is upgraded in place when a
campaign opens it for writing; read-only, it is read as it is.

Seals. Every row carries a seal, a hash of its values, so a row changed by
hand (or by another program) reads as "this database was changed" rather
than as a replay that "did not reproduce". The seal guards against
accidents, not against someone who means to forge one. Each value is also
checked for its type when read, so an edited row never becomes a traceback.
Rows written by schema 1 have no seal (NULL).

Shrunk plans. A reported failure is shrunk after its campaign; the shrunk
plan, with the outcome it gave, is stored beside the run (`shrunk_*`), and
`tlasim repro` replays it by default.

Failure ids are `CAMPAIGN:SEED`, such as `1:8812`. Unlike a rowid they mean
something to a reader, survive VACUUM and copying rows between files, and
say which run to replay without looking anything up.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from tlasim.protocols.errors import ConfigError, InternalError
from tlasim.sim.campaign.records import (
    CAMPAIGN_ROW,
    COVERAGE_ROW,
    FAILED,
    RUN_COLUMNS,
    RUN_ROW,
    SCHEMA,
    SCHEMA_VERSION,
    SEED_MAX,
    SHRUNK_COLUMNS,
    UPGRADE_1_TO_2,
    UPGRADE_2_TO_3,
    VALIDATE_MODES,
    Campaign,
    RunRecord,
    SeedOutcome,
    ShrunkRun,
    campaign_of,
    column_problem,
    coverage_columns,
    coverage_from_columns,
    field_of,
    format_failure_id,
    is_real,
    parse_failure_id,
    seal_of,
    shown,
)
from tlasim.sim.coverage.run import RunCoverage
from tlasim.tracing.inputs import check_regular_file, open_regular_file

__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "SEED_MAX",
    "VALIDATE_MODES",
    "Campaign",
    "ResultsDB",
    "RunRecord",
    "SeedOutcome",
    "ShrunkRun",
    "format_failure_id",
    "parse_failure_id",
]

APPLICATION_ID = 0x544C4153  # "TLAS": marks a SQLite file as a tlasim results database
SQLITE_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite 3 file
BUSY_TIMEOUT_SECONDS = 30.0  # how long a reader or a second writer waits for a lock


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ResultsDB:
    """A tlasim results database, opened or created at `path`.

    `readonly` opens an existing database for reading only: nothing is ever
    created or written, not even in an empty file.
    """

    def __init__(self, path: str | os.PathLike[str], *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        exists = _check_file(self.path)
        if readonly and not exists:
            raise ConfigError(f"results database {self.path}: no such file")
        try:
            if readonly:
                self._conn = sqlite3.connect(
                    self.path.resolve().as_uri() + "?mode=ro",
                    uri=True, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None,
                )
            else:
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
                if not readonly:
                    self._conn.execute("PRAGMA journal_mode=WAL")
                    self._conn.execute("PRAGMA synchronous=NORMAL")
                    self._conn.execute("PRAGMA foreign_keys=ON")
                self._columns = {
                    table: {row[1] for row in self._conn.execute(f"PRAGMA table_info({table})")}
                    for table in ("campaigns", "runs", "coverage")
                }
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
            if self.readonly:
                raise ConfigError(
                    f"{self.path} is empty: it holds no results (a campaign with --db "
                    "fills it); it was left as it was"
                )
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
        if version < 1 or missing:
            raise ConfigError(
                f"{self.path} is a damaged tlasim results database (schema {version}, "
                f"missing tables: {', '.join(sorted(missing)) or 'none'})"
            )
        if version < SCHEMA_VERSION and not self.readonly:
            self._upgrade()

    def _upgrade(self) -> None:
        """Bring an older file to this schema: schema 2 added the seal and
        shrunk-plan columns, schema 3 the coverage table."""
        with self._transaction():
            version = self._identity()[1]
            if version < SCHEMA_VERSION:
                for statement in (*(UPGRADE_1_TO_2 if version == 1 else ()), *UPGRADE_2_TO_3):
                    self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

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

    # ---- reading rows, checked ----

    def _select(self, alias: str, table: str, columns: Sequence[str]) -> str:
        """Column expressions; a column a schema 1 file lacks reads as NULL."""
        return ", ".join(
            f"{alias}.{c}" if c in self._columns[table] else "NULL" for c in columns
        )

    def _changed(self, table: str, key: str, detail: str) -> ConfigError:
        return ConfigError(
            f"{self.path}: this database was changed after tlasim wrote it (by hand or "
            f"by another program): table {table}, row {key}: {detail}; tlasim will not "
            "trust it: restore a copy, or run the campaign again into another --db"
        )

    def _decoded(
        self, table: str, columns: Sequence[str], row: Sequence[Any], key: str
    ) -> tuple[dict[str, Any], bool]:
        """A row's values by column, each checked for its type and the row for its seal.

        Returns the values (without the seal) and whether the row was sealed.
        """
        values = dict(zip(columns, row, strict=True))
        for column, value in values.items():
            problem = column_problem(column, value)
            if problem is not None:
                raise self._changed(table, key, f"column {column} holds {shown(value)}; "
                                    f"expected {problem}")
            if is_real(column):
                values[column] = float(value)
        seal = values.pop("seal")
        if seal is not None and seal != seal_of(table, values):
            raise self._changed(
                table, key, "its values no longer match the seal tlasim stored with them"
            )
        return values, seal is not None

    def _campaign_of(self, row: Sequence[Any]) -> tuple[Campaign, bool]:
        values, sealed = self._decoded("campaigns", CAMPAIGN_ROW, row, f"id {shown(row[0])}")
        if values["seed_stop"] <= values["seed_start"]:
            raise self._changed(
                "campaigns", f"id {values['id']}",
                f"seeds {values['seed_start']}:{values['seed_stop']} are not a range",
            )
        return campaign_of(values), sealed

    def _run_of(self, row: Sequence[Any]) -> tuple[SeedOutcome, ShrunkRun | None, bool]:
        key = f"campaign {shown(row[0])} seed {shown(row[1])}"
        values, sealed = self._decoded("runs", RUN_ROW, row, key)
        outcome = SeedOutcome(**{field_of(c): values[c] for c in RUN_COLUMNS})
        shrunk = None
        if values["shrunk_plan"] is not None:
            if values["shrunk_outcome"] is None:
                raise self._changed("runs", key, "it has a shrunk plan but no shrunk outcome")
            shrunk = ShrunkRun(
                values["shrunk_plan"], values["shrunk_outcome"], values["shrunk_failure"]
            )
        return outcome, shrunk, sealed

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
        if seeds.start < 0 or seeds.stop > SEED_MAX + 1:
            raise ConfigError(f"seed range {seeds}: seeds are integers from 0 to {SEED_MAX}")
        self._writable()
        with self._guard(), self._transaction():
            found = self._find_campaign(protocol, bug, seeds, options)
            if found is None:
                created = _now()
                cursor = self._conn.execute(
                    "INSERT INTO campaigns (protocol, bug, seed_start, seed_stop, options,"
                    " validate, created) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (protocol, bug, seeds.start, seeds.stop, options, validate, created),
                )
                campaign_id = cursor.lastrowid
                assert campaign_id is not None
                values = {
                    "id": campaign_id, "protocol": protocol, "bug": bug,
                    "seed_start": seeds.start, "seed_stop": seeds.stop, "options": options,
                    "validate": validate, "created": created,
                }
                self._conn.execute(
                    "UPDATE campaigns SET seal = ? WHERE id = ?",
                    (seal_of("campaigns", values), campaign_id),
                )
                return campaign_of(values)
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

    def _writable(self) -> None:
        if self.readonly:
            raise InternalError(f"{self.path} was opened read-only, yet something writes to it")

    def _find_campaign(
        self, protocol: str, bug: str | None, seeds: range, options: str
    ) -> Campaign | None:
        row = self._conn.execute(
            f"SELECT {self._select('c', 'campaigns', CAMPAIGN_ROW)} FROM campaigns AS c"
            " WHERE c.protocol = ? AND IFNULL(c.bug, '') = IFNULL(?, '') AND c.seed_start = ?"
            " AND c.seed_stop = ? AND c.options = ?",
            (protocol, bug, seeds.start, seeds.stop, options),
        ).fetchone()
        return None if row is None else self._campaign_of(row)[0]

    def campaign(self, campaign_id: int) -> Campaign:
        with self._guard():
            row = self._conn.execute(
                f"SELECT {self._select('c', 'campaigns', CAMPAIGN_ROW)} FROM campaigns AS c"
                " WHERE c.id = ?",
                (campaign_id,),
            ).fetchone()
        if row is None:
            raise ConfigError(f"{self.path} holds no campaign {campaign_id}")
        return self._campaign_of(row)[0]

    def campaigns(self) -> list[Campaign]:
        with self._guard():
            rows = self._conn.execute(
                f"SELECT {self._select('c', 'campaigns', CAMPAIGN_ROW)} FROM campaigns AS c"
                " ORDER BY c.id"
            ).fetchall()
        return [self._campaign_of(row)[0] for row in rows]

    # ---- runs ----

    def record(self, campaign_id: int, outcomes: Sequence[SeedOutcome]) -> None:
        """Commit a finished batch: all of its seeds, or (killed midway) none."""
        self._writable()
        finished = _now()
        rows = []
        for o in outcomes:
            values: dict[str, Any] = {"campaign": campaign_id}
            values.update((c, getattr(o, field_of(c))) for c in RUN_COLUMNS)
            values["tlc_seconds"] = float(values["tlc_seconds"])
            values["finished"] = finished
            values.update(dict.fromkeys(SHRUNK_COLUMNS))
            rows.append((*values.values(), seal_of("runs", values)))
        coverage_rows = []
        for o in outcomes:
            if o.coverage is not None:
                values = {"campaign": campaign_id, "seed": o.seed, **coverage_columns(o.coverage)}
                coverage_rows.append((*values.values(), seal_of("coverage", values)))
        try:
            with self._guard(), self._transaction():
                self._conn.executemany(
                    f"INSERT INTO runs ({', '.join(RUN_ROW)})"
                    f" VALUES ({', '.join('?' * len(RUN_ROW))})", rows
                )
                self._conn.executemany(
                    f"INSERT INTO coverage ({', '.join(COVERAGE_ROW)})"
                    f" VALUES ({', '.join('?' * len(COVERAGE_ROW))})", coverage_rows
                )
        except sqlite3.IntegrityError as exc:
            seeds = ", ".join(str(o.seed) for o in outcomes)
            raise ConfigError(
                f"{self.path}: a seed of campaign {campaign_id} among {seeds} is already "
                f"recorded ({exc}); is another campaign resuming the same one?"
            ) from None

    def record_shrunk(self, campaign_id: int, seed: int, shrunk: ShrunkRun) -> None:
        """Store the shrunk plan of a recorded failure, with what the run did under it."""
        self._writable()
        where = "r.campaign = ? AND r.seed = ?"
        with self._guard(), self._transaction():
            row = self._conn.execute(
                f"SELECT {self._select('r', 'runs', RUN_ROW)} FROM runs AS r WHERE {where}",
                (campaign_id, seed),
            ).fetchone()
            if row is None:
                raise ConfigError(f"{self.path} holds no run {campaign_id}:{seed}")
            values, sealed = self._decoded(
                "runs", RUN_ROW, row, f"campaign {campaign_id} seed {seed}"
            )
            values.update(shrunk_plan=shrunk.plan_json, shrunk_outcome=shrunk.outcome,
                          shrunk_failure=shrunk.failure)
            # A row of schema 1 stays unsealed: sealing it now would vouch for it.
            seal = seal_of("runs", values) if sealed else None
            self._conn.execute(
                "UPDATE runs SET shrunk_plan = ?, shrunk_outcome = ?, shrunk_failure = ?,"
                " seal = ? WHERE campaign = ? AND seed = ?",
                (shrunk.plan_json, shrunk.outcome, shrunk.failure, seal, campaign_id, seed),
            )

    def finished_seeds(self, campaign_id: int) -> set[int]:
        with self._guard():
            rows = self._conn.execute(
                "SELECT seed FROM runs WHERE campaign = ?", (campaign_id,)
            ).fetchall()
        return {row[0] for row in rows}

    def outcomes(self, campaign_id: int) -> list[SeedOutcome]:
        """Every recorded seed of a campaign, in seed order, each with its
        run's coverage when it was measured."""
        with self._guard():
            rows = self._conn.execute(
                f"SELECT {self._select('r', 'runs', RUN_ROW)} FROM runs AS r"
                " WHERE r.campaign = ? ORDER BY r.seed",
                (campaign_id,),
            ).fetchall()
        outcomes = [self._run_of(row)[0] for row in rows]
        coverage = self.coverage(campaign_id)
        return [o if o.seed not in coverage else dataclasses.replace(o, coverage=coverage[o.seed])
                for o in outcomes]

    def coverage(self, campaign_id: int) -> dict[int, RunCoverage]:
        """The coverage of each of a campaign's runs that measured it, by seed."""
        if not self._columns["coverage"]:
            return {}  # a file of schema 2 or older, opened read-only
        with self._guard():
            rows = self._conn.execute(
                f"SELECT {', '.join(COVERAGE_ROW)} FROM coverage WHERE campaign = ?",
                (campaign_id,),
            ).fetchall()
        found = {}
        for row in rows:
            key = f"campaign {shown(row[0])} seed {shown(row[1])}"
            values, _sealed = self._decoded("coverage", COVERAGE_ROW, row, key)
            coverage = coverage_from_columns(values)
            if coverage is None:
                raise self._changed("coverage", key, "its actions or pairs are not the JSON "
                                    "lists tlasim writes")
            found[values["seed"]] = coverage
        return found

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
            raise ConfigError(f"{self.path} holds no run {shown(failure_id)}")
        choices = ", ".join(r.failure_id for r in found)
        raise ConfigError(
            f"{self.path}: seed {seed} was run by several campaigns; name one of {choices}"
        )

    def _records(self, where: str, params: tuple[Any, ...]) -> list[RunRecord]:
        columns = ", ".join(
            (self._select("c", "campaigns", CAMPAIGN_ROW), self._select("r", "runs", RUN_ROW))
        )
        with self._guard():
            rows = self._conn.execute(
                f"SELECT {columns} FROM runs AS r"
                f" JOIN campaigns AS c ON c.id = r.campaign WHERE {where}"
                " ORDER BY r.campaign, r.seed",
                params,
            ).fetchall()
        split = len(CAMPAIGN_ROW)
        records = []
        for row in rows:
            campaign, campaign_sealed = self._campaign_of(row[:split])
            outcome, shrunk, run_sealed = self._run_of(row[split:])
            records.append(RunRecord(campaign, outcome, shrunk, campaign_sealed and run_sealed))
        return records


def _check_file(path: Path) -> bool:
    """Refuse, before SQLite opens it, a path that cannot be a results database.

    Returns whether the file exists. Only a regular file is opened at all, so
    a FIFO or a device given as --db never blocks or streams forever.
    """
    if not check_regular_file(path, "results database"):
        return False
    # The limit is moot: only the first bytes are read.
    with open_regular_file(path, "results database", limit=2**62) as stream:
        head = stream.read(len(SQLITE_MAGIC))
    # An empty file is an empty SQLite database, which is ours to fill.
    if head and head != SQLITE_MAGIC:
        raise ConfigError(
            f"{path} is not a tlasim results database (not a SQLite file); "
            "it was left untouched, pass another --db"
        )
    return True
