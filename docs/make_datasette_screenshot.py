"""Make docs/datasette.png: the Datasette plugin's page of one tree.

`datasette serve` runs on examples/logs.db (immutable: Datasette opens it
read-only, and the plugin reads through its own read-only connection), with
the search index's cache in a temporary directory; headless Chromium (Debian's
/usr/bin/chromium, driven by Playwright) opens "How hash maps work" from the
`responses` table's link, selects the answer that compares a hash map with a
binary search tree, and saves the window at 1400x900. examples/logs.db is
unchanged.

Run it from anywhere: ``python docs/make_datasette_screenshot.py``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

HERE = Path(__file__).parent
DATABASE = HERE.parent / "examples" / "logs.db"
TARGET = HERE / "datasette.png"
TREE = "01jb2hashmap0000000000000"
NODE = "01jb2hm04e000000000000000"
#: Headless, without the background traffic of a first run.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(url: str, process: subprocess.Popen[bytes]) -> None:
    """Return once `url` answers; fail if the server stops or a minute passes."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("datasette serve stopped")
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"no answer from {url}")


def screenshot() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as cache:
        environment = {**os.environ, "XDG_CACHE_HOME": cache}
        command = [sys.executable, "-m", "datasette", "serve", "--immutable"]
        command += [str(DATABASE), "--host", "127.0.0.1", "--port", str(port)]
        process = subprocess.Popen(command, env=environment)
        try:
            wait_for(url + "/-/versions.json", process)
            chromium = shutil.which("chromium") or "/usr/bin/chromium"
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=chromium, args=CHROMIUM_ARGS
                )
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.goto(f"{url}/logs/responses?_sort=id")
                page.click(f'td.col-conversation_id a.convgraph-tree[href$="{TREE}"]')
                page.wait_for_selector("html[data-ready='true']")
                page.click(f'g.node[data-id="{NODE}"]')
                page.wait_for_timeout(300)
                page.screenshot(path=str(TARGET))
                browser.close()
        finally:
            process.terminate()
            process.wait(timeout=60)


if __name__ == "__main__":
    screenshot()
    print(TARGET)
