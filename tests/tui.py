"""Driving `convgraph browse` in tests: Textual's headless pilot on a known
file, and the widgets' lines as the screen draws them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from convgraph.browse import BrowseApp
from convgraph.browse.details import CONTINUED
from convgraph.browse.tree_screen import DETAILS_DELAY, ConversationScreen
from tests.helpers import file_digest

EXAMPLES = Path(__file__).parent.parent / "examples"

Scenario = Callable[[BrowseApp, object], Awaitable[None]]


async def settle(app: BrowseApp, pilot) -> None:
    """Let the background reads end and their results reach the screen."""
    for _ in range(2):
        await app.workers.wait_for_complete()
        await pilot.pause()


def drive(db: Path, scenario: Scenario, **options: object) -> None:
    """Run the browser on `db` headless at 80x24 (or `size`) and play
    `scenario`; the file must be unchanged afterwards unless the scenario
    writes."""
    before = file_digest(db)
    writes = options.pop("writes", False)
    size = options.pop("size", (80, 24))

    async def main() -> None:
        app = BrowseApp(db, **options)  # type: ignore[arg-type]
        async with app.run_test(size=size) as pilot:  # type: ignore[arg-type]
            await settle(app, pilot)
            await scenario(app, pilot)

    asyncio.run(main())
    if not writes:
        assert file_digest(db) == before


async def rested(pilot) -> None:
    """Wait until the details pane has caught up with the cursor (it waits
    for keys pressed in quick succession to rest)."""
    await pilot.pause(DETAILS_DELAY * 2)


async def open_first(app: BrowseApp, pilot, name: str) -> ConversationScreen:
    """Filter the list down to `name` and open it."""
    await pilot.press("slash", *name, "enter")
    await settle(app, pilot)
    screen = app.screen
    assert isinstance(screen, ConversationScreen)
    return screen


def drawn(screen: ConversationScreen) -> list[str]:
    return [line for _, line in screen.tree.lines()]


def pane_strips(screen: ConversationScreen) -> list:
    """The details pane's body as the screen draws it: one Strip a line."""
    from textual.geometry import Region

    body = screen.details.query_one("#details-body")
    return body.render_lines(Region(0, 0, body.size.width, body.size.height))


def pane_lines(screen: ConversationScreen) -> list[str]:
    """The pane's body as drawn, a line of the text shown each: a line too
    wide for the pane goes on in the lines below marked "↪ ", joined back."""
    lines: list[str] = []
    for strip in pane_strips(screen):
        # A line that goes on filled the pane's width: its end is its own.
        if strip.text.startswith(CONTINUED) and lines:
            lines[-1] += strip.text[len(CONTINUED) :]
        else:
            lines.append(strip.text)
    return [line.rstrip() for line in lines]


def screen_rows(app: BrowseApp) -> list[str]:
    """The whole screen as the terminal shows it, one string a row (every
    widget composed, scrollbars included)."""
    strips = app.screen._compositor.render_strips()
    return [strip.text for strip in strips]
