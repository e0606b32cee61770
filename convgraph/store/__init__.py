"""The write side: migration, the rules the database enforces, deletion, notes and
branching. Everything here opens the file read-write and changes it in short exclusive
transactions taken while no other connection holds a lock (`store.transaction`), so llm
logging meanwhile never loses a prompt."""

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
