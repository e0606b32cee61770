"""Coding agents' sessions: `sessions` opens them as a `Source`, one module
per agent reads its format, `join` hangs sessions where they continue."""
