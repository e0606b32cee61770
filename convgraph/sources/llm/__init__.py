"""llm's `logs.db` of every generation: one reader per generation, the rules
that join them, chunked reads, and a columnar read (`fast` extra)."""
