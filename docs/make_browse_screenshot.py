"""Make docs/browse.svg: `convgraph browse` on examples/logs.db at 80x24.

The browser runs headless (Textual's pilot), opens "How hash maps work",
moves to the second answer of its first branch point and saves the screen
as SVG. Reading never writes, so examples/logs.db is unchanged.

Run it from anywhere: ``python docs/make_browse_screenshot.py``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from convgraph.browse import BrowseApp

HERE = Path(__file__).parent
DATABASE = HERE.parent / "examples" / "logs.db"
TARGET = HERE / "browse.svg"


async def screenshot() -> None:
    app = BrowseApp(DATABASE)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("slash", *"hash", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        # Down to the first follow-up, then its next sibling.
        await pilot.press("j", "l", "right_square_bracket")
        await pilot.pause(0.3)
        app.save_screenshot(str(TARGET.name), str(TARGET.parent))


if __name__ == "__main__":
    asyncio.run(screenshot())
    print(TARGET)
