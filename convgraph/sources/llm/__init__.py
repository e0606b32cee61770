"""llm's `logs.db` of every generation, its rules and its columnar read."""
