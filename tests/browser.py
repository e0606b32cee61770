"""Chromium as the browser tests (and the HTML export's benchmark) launch it:
Debian's own Chromium, which Playwright drives but never downloads here,
headless, with nothing it would fetch, update or sync on its own, so that a
page's only requests are the ones a test lets through. Where Playwright for
Python or Chromium is missing, `chromium` skips the test and says why.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

#: Chromium's switches: headless, no sandbox (the tests may run as root), no
#: GPU, and none of the background traffic a first run starts.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_executable() -> str | None:
    """The path of Debian's Chromium, or None where it is not installed."""
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    return executable if os.access(executable, os.X_OK) else None


def launch(playwright: Any) -> Any:
    """A Chromium browser from a started Playwright (`sync_playwright()`),
    launched with `CHROMIUM_ARGS`; Chromium must be installed."""
    executable = chromium_executable()
    if executable is None:
        raise FileNotFoundError("Chromium is not installed")
    return playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium for the duration, closed after; the test skips
    where Playwright for Python or Chromium is missing."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="Playwright for Python is not installed"
    )
    if chromium_executable() is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    with sync_api.sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            yield browser
        finally:
            browser.close()
