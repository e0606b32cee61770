"""Every error bad input can cause: a `ConvgraphError`, which the command line
prints as one line with exit status 2."""

#: How much of a user's input a message repeats, since a page or a terminal
#: lays out what it is given and an id may be a megabyte.
ECHOED = 80
#: An id longer than any a source holds, refused before any read.
LONGEST_ID = 1024


def echoed(text: object) -> str:
    """`text` as a message repeats it: quoted, cut to `ECHOED` characters."""
    whole = str(text)
    shown = repr(whole[:ECHOED])
    if len(whole) <= ECHOED and len(shown) <= ECHOED:
        return shown
    return shown[: ECHOED - 2] + "…" + shown[-1]


class ConvgraphError(Exception):
    """Base class: a problem with the user's input, not a bug in convgraph."""


class BadNumber(ConvgraphError, ValueError):
    """A number the user typed that is no whole number in its range."""


def number(text: str, least: int = 0, most: int = 10**9, name: str = "") -> int:
    """`text` as a whole number from `least` to `most`: ASCII digits only
    (`int` takes other scripts' digits, and spends time on thousands).
    Raises `BadNumber`, naming `name` where given."""
    digits = text.strip()
    if digits.isascii() and digits.isdigit() and len(digits) <= len(str(most)):
        value = int(digits)
        if least <= value <= most:
            return value
    wanted = f"a whole number from {least} to {most}"
    if name:
        raise BadNumber(f"{name} is {wanted}, not {echoed(text)}")
    raise BadNumber(f"{echoed(text)} is not {wanted}")


class DatabaseError(ConvgraphError):
    """The file is missing, is not SQLite, or holds no llm tables."""


class UnknownNode(ConvgraphError, KeyError):
    """No node (response or turn) has this id."""

    def __str__(self) -> str:
        return f"no node with id {echoed(self.args[0])}"


class HiddenNode(UnknownNode):
    """A node in a branch the user hid, left out unless hidden branches are asked for."""

    def __str__(self) -> str:
        return (
            f"node {echoed(self.args[0])} is in a hidden branch: `convgraph unhide`"
            " shows it again, `--all` shows it once"
        )


class UnknownConversation(ConvgraphError, KeyError):
    """No conversation (or thread) has this id."""

    def __str__(self) -> str:
        return f"no conversation with id {echoed(self.args[0])}"


class AmbiguousId(ConvgraphError, LookupError):
    """A prefix that begins several ids: the first `candidates`, a line each, and `more`."""

    def __init__(
        self,
        prefix: str,
        candidates: list[str],
        more: bool = False,
        none_of: str | None = None,
    ):
        super().__init__(prefix, candidates, more)
        self.prefix, self.candidates, self.more = prefix, candidates, more
        #: The kind wanted, where the prefix begins none of that kind.
        self.none_of = none_of

    def heading(self) -> str:
        """The first line: which prefix, and how many ids it begins."""
        count = len(self.candidates)
        begins = f"more than {count} ids" if self.more else f"{count} ids"
        if self.none_of is not None:
            begins += f", none of them a {self.none_of}"
        return f"{self.prefix} is ambiguous: it begins {begins}"

    def __str__(self) -> str:
        lines = [f"{self.heading()}:", *(f"  {line}" for line in self.candidates)]
        return "\n".join(lines)


class HeldBySeveral(ConvgraphError, LookupError):
    """An id that several sources read together hold for different things."""

    def __init__(self, id: str, sources: list[str]):
        super().__init__(id, sources)
        self.id, self.sources = id, sources

    def __str__(self) -> str:
        return (
            f"{self.id} is in several sources ({', '.join(self.sources)}):"
            " read one of them with --db PATH"
        )


class ConversationNotNode(UnknownNode):
    """An id given for a node names a conversation (`id`, of the tree `tree_id`)."""

    def __init__(self, given: str, id: str, tree_id: str):
        super().__init__(given)
        self.given, self.id, self.tree_id = given, id, tree_id

    def __str__(self) -> str:
        return f"{self.id} is a conversation, not a node"


class NodeNotConversation(UnknownConversation):
    """An id given for a conversation names a node (`id`, of the tree `tree_id`)."""

    def __init__(self, given: str, id: str, tree_id: str):
        super().__init__(given)
        self.given, self.id, self.tree_id = given, id, tree_id

    def __str__(self) -> str:
        return f"{self.id} is a node of conversation {self.tree_id}, not a conversation"


class UnrelatedNodes(ConvgraphError):
    """No longer raised (branches part at the start); kept for code that catches it."""


class DifferentConversations(ConvgraphError):
    """Two nodes that belong to different conversation trees."""


class ExportError(ConvgraphError, ValueError):
    """A file is not what the reader expects, or a forest cannot be written."""


class DatabaseLocked(ConvgraphError):
    """Another connection held the write lock for longer than the busy timeout."""


class RuleViolation(ConvgraphError):
    """A write the tree's rules refuse (the database's triggers said no)."""


class NotMigrated(ConvgraphError):
    """The database lacks the parent column or the rules that guard it."""


class MigrationRefused(ConvgraphError):
    """The migration cannot go ahead as asked; nothing was changed."""


class DeletionRefused(ConvgraphError):
    """The deletion would break the policy or the store; nothing was deleted."""


class ImportRefused(ConvgraphError):
    """A chat export cannot be imported there; nothing was written."""


class BranchError(ConvgraphError):
    """The branch cannot be made: no llm, an unknown model, a model error."""
