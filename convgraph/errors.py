"""The errors a user can cause.

Every error that bad input can provoke is a `ConvgraphError`: the command line
prints its message as one line and exits with status 2, and Python callers can
catch the one base class.
"""


class ConvgraphError(Exception):
    """Base class: a problem with the user's input, not a bug in convgraph."""


class DatabaseError(ConvgraphError):
    """The file is missing, is not SQLite, or holds no llm tables."""


class UnknownNode(ConvgraphError, KeyError):
    """No node (response or turn) has this id."""

    def __str__(self) -> str:
        return f"no node with id {self.args[0]!r}"


class UnknownConversation(ConvgraphError, KeyError):
    """No conversation (or thread) has this id."""

    def __str__(self) -> str:
        return f"no conversation with id {self.args[0]!r}"
