"""The write side: migration, the rules the database enforces, deletion and
branching.

Reading opens a database read-only; everything here opens it read-write with a
busy timeout and makes each change in a short exclusive transaction, taken only
at a moment when no other connection holds a lock, so that llm logging at the
same time never loses a prompt (`convgraph.store.transaction`). `migrate` adds
the parent column (`parent_response_id`), its index and the triggers of
`convgraph.store.rules` to a legacy database, a few short transactions at a
time; `rule_problems` says when a migrated file has lost those triggers;
`log_response` (`convgraph.store.responses`) writes a legacy row under the
rules, with an id in llm's form; `delete_node` applies the
deletion policy (docs/design.md#deleting-a-node); `branch` continues a
conversation from any node with llm's Python API, `fan_out` with several
answers at once, and `regenerate` asks a node's prompt again.
"""

from convgraph.errors import (
    BranchError,
    DatabaseLocked,
    DeletionRefused,
    NotMigrated,
    RuleViolation,
)
from convgraph.store.branch import FanOut, branch, fan_out, regenerate
from convgraph.store.delete import Deletion, delete_node
from convgraph.store.migrate import (
    MigrationPlan,
    MigrationRefused,
    MigrationResult,
    broken_links,
    migrate,
    plan_migration,
)
from convgraph.store.responses import LoggedNode, log_response
from convgraph.store.rules import rule_problems

__all__ = [
    "BranchError",
    "DatabaseLocked",
    "Deletion",
    "DeletionRefused",
    "FanOut",
    "LoggedNode",
    "MigrationPlan",
    "MigrationRefused",
    "MigrationResult",
    "NotMigrated",
    "RuleViolation",
    "branch",
    "broken_links",
    "delete_node",
    "fan_out",
    "log_response",
    "migrate",
    "plan_migration",
    "regenerate",
    "rule_problems",
]
