"""Pages of the HTML export opened in Chromium, for the browser tests of
`test_export_html.py` and `test_export_html_forest.py`.

`Pages` opens exported files, each in a context of its own at the viewport
asked for, with every request other than the page itself blocked and
recorded, and every console error, page error, dialog and policy violation
collected; `Visit.assert_clean` asserts there were none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers import SAFETY_SECONDS

# Run in the page before its own script: record policy violations.
WATCH_POLICY = """
window.__violations = [];
document.addEventListener("securitypolicyviolation",
    (event) => window.__violations.push(event.violatedDirective + " " + event.blockedURI));
"""


@dataclass
class Visit:
    """One page opened in the browser, and everything that went wrong in it."""

    page: Any
    url: str
    errors: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert self.errors == []
        assert self.blocked == []
        assert self.dialogs == []
        assert self.page.evaluate("window.__violations") == []

    def node(self, node_id: str):
        return self.page.locator(f'g.node[data-id="{node_id}"]')

    def drawn_ids(self) -> set[str]:
        return set(self.attributes("g.node", "data-id"))

    def ids_with_class(self, name: str) -> set[str]:
        return set(self.attributes(f"g.node.{name}", "data-id"))

    def attributes(self, selector: str, name: str) -> list[str | None]:
        """The attribute `name` of every element that `selector` finds."""
        return self.page.eval_on_selector_all(
            selector, "(found, name) => found.map(e => e.getAttribute(name))", name
        )

    def count(self, selector: str) -> int:
        return self.page.locator(selector).count()

    def panel(self, selector: str) -> str:
        return self.page.text_content(f"#panel {selector}")

    def open_conversation(self, conversation_id: str) -> None:
        self.page.click(
            f'#conversation-list button[data-conversation="{conversation_id}"]'
        )
        assert self.page.text_content("#conversation-title")


class Pages:
    """Opens pages in `browser` (a Playwright Chromium); `close` closes them."""

    def __init__(self, browser: Any) -> None:
        self.browser = browser
        self.contexts: list[Any] = []

    def open(self, path: Path, viewport: tuple[int, int] = (1400, 900)) -> Visit:
        """The page at `path`, opened at `viewport` (width, height) and ready."""
        context = self.browser.new_context(
            viewport={"width": viewport[0], "height": viewport[1]}
        )
        self.contexts.append(context)
        # How long Playwright waits for an element: a safety limit only.
        context.set_default_timeout(SAFETY_SECONDS * 1000)
        page = context.new_page()
        visit = Visit(page, path.resolve().as_uri())

        def route(route):
            if route.request.url == visit.url:
                route.continue_()
            else:
                visit.blocked.append(route.request.url)
                route.abort()

        def dialog(dialog):
            visit.dialogs.append(dialog.message)
            dialog.dismiss()

        context.route("**/*", route)
        page.on(
            "console",
            lambda message: (
                message.type == "error" and visit.errors.append(message.text)
            ),
        )
        page.on("pageerror", lambda error: visit.errors.append(str(error)))
        page.on("dialog", dialog)
        page.add_init_script(WATCH_POLICY)
        page.goto(visit.url)
        page.wait_for_selector("html[data-ready='true']")
        return visit

    def close(self) -> None:
        for context in self.contexts:
            context.close()
        self.contexts.clear()
