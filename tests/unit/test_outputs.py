"""The one rule for files tlasim writes (tracing/outputs.py), by kind of path,
and the commands that write a user-named path keeping to it (issue 28).

A regular file is replaced whole or not at all; a FIFO or a character device
is written as it is and stays what it was; a folder, a socket or a path
under a file is refused before anything is written; a missing folder is
made. These tests run as root in CI, where a rename over /dev/null would
replace the device for the whole machine, so /dev/null is the device they
write.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tlasim.protocols.errors import ConfigError, TraceFormatError
from tlasim.sim import exitcodes
from tlasim.sim.campaign.results import ResultsDB, SeedOutcome
from tlasim.sim.campaign.sweep import campaign_options_json, plan_json
from tlasim.sim.cli.main import main
from tlasim.sim.run.runner import run_seed
from tlasim.tracing.codec import read_trace
from tlasim.tracing.outputs import open_output, write_output

DEVICE = Path("/dev/null")
SAFETY_SEED = 96  # breaks agreement under abort-after-prepare (see test_cli.py)
SAFETY_BUG = "abort-after-prepare"


@pytest.fixture(autouse=True)
def _device_is_a_device() -> Iterator[None]:
    """Every test leaves /dev/null the character device it found."""
    before = os.stat(DEVICE)
    assert stat.S_ISCHR(before.st_mode)
    yield
    after = os.stat(DEVICE)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def bound_socket(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    return sock


class FifoReader:
    """Reads a FIFO in a thread. It opens the FIFO before the writer does, so
    the writer finds a reader, and drains it, so a large write never fills it."""

    def __init__(self, path: Path) -> None:
        self.data = bytearray()
        self.written = threading.Event()
        self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(self._fd, True)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while True:
            chunk = os.read(self._fd, 65536)
            if chunk:
                self.data += chunk
            elif self.written.is_set():
                return
            else:
                time.sleep(0.01)  # no writer yet: a read of a FIFO without one is empty

    def finish(self) -> bytes:
        self.written.set()
        self._thread.join()
        os.close(self._fd)
        return bytes(self.data)


# ---- the rule, by kind of path ----


def test_a_new_file_is_written_whole_with_no_temporary_file_left(tmp_path: Path) -> None:
    write_output(tmp_path / "out.ndjson", "--trace", b"line\n")
    assert (tmp_path / "out.ndjson").read_bytes() == b"line\n"
    assert os.listdir(tmp_path) == ["out.ndjson"]


def test_a_regular_file_is_replaced_whole_and_keeps_its_permission_bits(tmp_path: Path) -> None:
    path = tmp_path / "out.ndjson"
    path.write_bytes(b"old\n")
    path.chmod(0o640)
    inode = path.stat().st_ino
    write_output(path, "--trace", b"new\n")
    assert path.read_bytes() == b"new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert path.stat().st_ino != inode  # renamed over, not written in place
    assert os.listdir(tmp_path) == ["out.ndjson"]


def test_a_writer_that_raises_leaves_the_old_file_and_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "out.ndjson"
    path.write_bytes(b"old\n")
    with pytest.raises(RuntimeError), open_output(path, "--trace") as stream:
        stream.write(b"half a tra")
        raise RuntimeError("the run failed half-way")
    assert path.read_bytes() == b"old\n"
    assert os.listdir(tmp_path) == ["out.ndjson"]


def test_a_symlink_stays_a_symlink_and_its_file_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "out.ndjson"
    target.write_bytes(b"old\n")
    link = tmp_path / "link.ndjson"
    link.symlink_to(target)
    write_output(link, "--trace", b"new\n")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == b"new\n"
    dangling = tmp_path / "dangling.ndjson"
    dangling.symlink_to(tmp_path / "real" / "made.ndjson")
    write_output(dangling, "--trace", b"made\n")
    assert dangling.is_symlink() and (tmp_path / "real" / "made.ndjson").read_bytes() == b"made\n"


def test_a_fifo_with_a_reader_receives_the_data_and_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    data = b"x" * 300_000  # more than a pipe holds: the write waits for the reader
    try:
        write_output(fifo, "--trace", data)
    finally:
        received = reader.finish()
    assert received == data
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_fifo_no_process_reads_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    code = ("import sys\nfrom tracing.outputs import write_output\n"
            "write_output(sys.argv[1], '--trace', b'x')")
    # A subprocess, so that a regression hangs only it: the timeout is a safety net.
    done = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode != 0
    assert "no process reads the FIFO" in done.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert os.listdir(tmp_path) == ["trace.fifo"]


def test_dev_null_is_written_as_a_device_and_stays_a_character_device() -> None:
    write_output(DEVICE, "--trace", b"into the void\n")
    with open_output(DEVICE, "--trace") as stream:
        stream.write(b"again\n")
    assert stat.S_ISCHR(os.stat(DEVICE).st_mode)


def test_a_missing_folder_is_made(tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / "out.ndjson"
    write_output(path, "--trace", b"x")
    assert path.read_bytes() == b"x"


@pytest.mark.parametrize("kind", ["folder", "socket", "file as folder"])
def test_a_path_that_cannot_be_written_is_refused_naming_the_option_and_losing_nothing(
    tmp_path: Path, kind: str
) -> None:
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "inside").write_bytes(b"kept")
    path = {
        "folder": keep,
        "socket": tmp_path / "sock",
        "file as folder": keep / "inside" / "out.ndjson",
    }[kind]
    sock = bound_socket(path) if kind == "socket" else None
    try:
        with pytest.raises(ConfigError) as raised, open_output(path, "--trace") as stream:
            stream.write(b"never")
    finally:
        if sock is not None:
            sock.close()
    message = str(raised.value)
    assert message.startswith(f"--trace {str(path)!r}") and "\n" not in message
    assert (keep / "inside").read_bytes() == b"kept"
    assert sorted(os.listdir(tmp_path)) == sorted(["keep", *(["sock"] if sock else [])])
    if kind == "socket":
        assert stat.S_ISSOCK(os.stat(path).st_mode)


def test_a_path_with_control_characters_is_named_escaped(tmp_path: Path) -> None:
    path = tmp_path / "a\nb\x1b[2J"
    path.mkdir()
    with pytest.raises(ConfigError) as raised:
        write_output(path, "--out", b"x")
    assert "\n" not in str(raised.value) and "\x1b" not in str(raised.value)


def test_the_error_class_is_the_callers(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError):
        write_output(tmp_path, "--trace", b"x", error=TraceFormatError)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in any folder")
def test_a_folder_that_cannot_be_written_in_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(ConfigError, match="cannot write in the folder"):
            write_output(locked / "out.ndjson", "--trace", b"x")
    finally:
        locked.chmod(0o700)


# ---- the commands ----


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def assert_one_line_error(output: str, *names: str) -> None:
    """Refused before anything ran: the whole output is one error line naming them."""
    lines = output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tlasim: error: "), output
    assert all(name in lines[0] for name in names), output


@pytest.fixture
def failure_db(tmp_path: Path) -> Path:
    """A results database holding one real failure, 1:SAFETY_SEED, that replays."""
    result = run_seed("twopc", SAFETY_SEED, bug=SAFETY_BUG).result
    assert result.failure is not None
    outcome = SeedOutcome(
        seed=SAFETY_SEED, outcome=result.outcome, failure=result.failure,
        steps=result.stats.steps, last_tick=result.stats.last_tick,
        crashes=result.stats.crashes, messages_lost=result.stats.messages_lost,
        messages_duplicated=result.stats.messages_duplicated, plan_json=plan_json(result.plan),
        validation="skipped", rejection=None, tlc_seconds=0.0, trace_path=None,
    )
    path = tmp_path / "results.db"
    with ResultsDB(path) as db:
        campaign = db.open_campaign(
            "twopc", SAFETY_BUG, range(SAFETY_SEED, SAFETY_SEED + 1),
            campaign_options_json("twopc", None, None), "none", resume=False,
        )
        db.record(campaign.id, [outcome])
    return path


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    path = tmp_path / "input.ndjson"
    run_seed("twopc", 1, trace_path=path)
    return path


def run_args(path: Path) -> list[str]:
    return ["run", "twopc", "--seed", "1", "--trace", str(path)]


def repro_args(db: Path) -> Callable[[Path], list[str]]:
    return lambda path: ["repro", str(db), f"1:{SAFETY_SEED}", "--trace", str(path)]


def test_run_trace_dev_null_writes_the_device_and_exits_0() -> None:
    code, output = invoke(*run_args(DEVICE))
    assert code == exitcodes.OK, output
    assert stat.S_ISCHR(os.stat(DEVICE).st_mode)


def test_repro_trace_dev_null_writes_the_device(failure_db: Path) -> None:
    code, output = invoke(*repro_args(failure_db)(DEVICE))
    assert code == exitcodes.SAFETY, output
    assert "replayed: safety: " in output
    assert stat.S_ISCHR(os.stat(DEVICE).st_mode)


def test_export_out_dev_null_writes_the_device(trace_file: Path) -> None:
    code, output = invoke("export", str(trace_file), "--out", str(DEVICE))
    assert code == exitcodes.OK, output
    assert stat.S_ISCHR(os.stat(DEVICE).st_mode)


def test_run_trace_fifo_with_a_reader_streams_the_whole_trace(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    try:
        code, output = invoke(*run_args(fifo))
    finally:
        received = reader.finish()
    assert code == exitcodes.OK, output
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    copy = tmp_path / "copy.ndjson"
    copy.write_bytes(received)
    assert read_trace(copy).end is not None


@pytest.mark.parametrize("schedule", [False, True])
def test_a_validated_run_into_a_fifo_is_checked_from_a_copy_and_streamed_whole(
    tmp_path: Path, schedule: bool
) -> None:
    # TLC reads a trace back, which a FIFO or a device cannot give: the run
    # writes a scratch file, TLC checks it, and it is then streamed out.
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    if schedule:
        path = tmp_path / "s.json"
        path.write_text('{"tlasim_schedule": 1, "protocol": "twopc", "seed": 0, "bug": null,'
                        ' "moves": [{"kind": "start", "node": "tm"}]}')
        args = ["run", "twopc", "--schedule", str(path), "--trace", str(fifo), "--validate"]
    else:
        args = [*run_args(fifo), "--validate"]
    reader = FifoReader(fifo)
    try:
        code, output = invoke(*args)
    finally:
        received = reader.finish()
    assert code == exitcodes.OK, output
    assert "ACCEPTED" in output and f"trace={fifo}" in output
    copy = tmp_path / "copy.ndjson"
    copy.write_bytes(received)
    assert read_trace(copy).end is not None


def test_run_trace_fifo_without_a_reader_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "tlasim.sim", *run_args(fifo)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == exitcodes.USAGE, done.stdout + done.stderr
    assert done.stdout == ""
    assert_one_line_error(done.stderr, "--trace", "no process reads the FIFO")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.parametrize("command", ["run", "repro", "export"])
def test_an_output_that_is_a_socket_or_under_a_file_is_refused_in_one_line(
    tmp_path: Path, failure_db: Path, trace_file: Path, command: str
) -> None:
    args = {
        "run": run_args,
        "repro": repro_args(failure_db),
        "export": lambda path: ["export", str(trace_file), "--out", str(path)],
    }[command]
    option = "--out" if command == "export" else "--trace"
    sock_path = tmp_path / "sock"
    sock = bound_socket(sock_path)
    try:
        code, output = invoke(*args(sock_path))
    finally:
        sock.close()
    assert code == exitcodes.USAGE, output
    if command != "repro":  # repro names the failure first
        assert_one_line_error(output, option, str(sock_path), "socket")
    assert "socket" in output.splitlines()[-1]
    assert stat.S_ISSOCK(os.stat(sock_path).st_mode)

    in_a_file = tmp_path / "file" / "out.ndjson"
    (tmp_path / "file").write_bytes(b"kept")
    code, output = invoke(*args(in_a_file))
    assert code == exitcodes.USAGE, output
    assert str(tmp_path / "file") in output.splitlines()[-1]
    assert (tmp_path / "file").read_bytes() == b"kept"


@pytest.mark.parametrize("command", ["run", "repro", "report"])
def test_an_output_that_is_a_folder_is_refused_and_the_folder_kept(
    tmp_path: Path, failure_db: Path, trace_file: Path, command: str
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    args = {
        "run": run_args,
        "repro": repro_args(failure_db),
        "report": lambda path: ["report", str(trace_file), "-o", str(path)],
    }[command]
    code, output = invoke(*args(folder))
    assert code == exitcodes.USAGE, output
    assert folder.is_dir() and not any(folder.iterdir())


def test_report_output_fifo_with_a_reader_receives_the_page(
    tmp_path: Path, trace_file: Path
) -> None:
    fifo = tmp_path / "page.fifo"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    try:
        code, output = invoke("report", str(trace_file), "-o", str(fifo))
    finally:
        received = reader.finish()
    assert code == exitcodes.OK, output
    assert received.startswith(b"<!DOCTYPE html>")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
