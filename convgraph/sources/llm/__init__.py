"""llm's `logs.db`, every generation of it: the legacy `responses` table (with
or without `parent_response_id`), the message store of llm 0.32 and later,
and files upgraded from one to the other (`database.LogDatabase`).

One reader per generation (`legacy`, `message_store`, with the tables that
hold their content beyond the texts: `legacy_parts`, `message_parts`), the
rules that join them (`generations`, `old_writers`, `turn_parents`, `runs`),
the chunked reads that let llm log meanwhile (`snapshot`), and the same
forest read as Arrow columns where the `fast` extra is installed
(`columnar`).
"""
