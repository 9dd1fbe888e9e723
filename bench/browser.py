"""Headless Chromium for the report benchmark and tests: Debian's package
(`make test` installs it when missing), driven through playwright, never a
browser playwright downloads."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
# Without the background-networking flags Chromium reaches for the network at
# start, which a closed network refuses; a fresh profile keeps runs apart.
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@contextmanager
def chromium_page(width: int = 1400, height: int = 900) -> Iterator[Any]:
    """A page in a fresh Chromium profile; page errors are gathered in `page.errors`."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="tlasim-chromium-") as profile, \
            sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=True, args=FLAGS,
            viewport={"width": width, "height": height},
        )
        try:
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.errors = errors
            yield page
        finally:
            context.close()
