"""The node contract's names (docs/design.md#the-node-contract), in one place
so that readers, forest, exporters and statistics agree without importing."""

#: The attributes a source reader reads from the file, in order.
SOURCE_ATTRIBUTES = (
    "conversation_id",
    "prompt",
    "system",
    "response",
    "parts",
    "tool_calls",
    "tools",
    "model",
    "datetime_utc",
    "input_tokens",
    "output_tokens",
    "duration_ms",
    "source",
)

#: After `NODE_ATTRIBUTES`, only where a source has them: an agent's working
#: directory and git branch, a merged node gone from its tree's newest copy
#: (`sources.merging`), the node's source where several are read as one.
PLACE_ATTRIBUTES = ("project", "git_branch")
GONE = "gone"
ORIGIN = "origin"
OPTIONAL_ATTRIBUTES = (*PLACE_ATTRIBUTES, GONE, ORIGIN)

#: A node's place among its branches, attached by the forest after reading.
BRANCH_ATTRIBUTES = ("active", "note", "preferred")

BOOLEAN_ATTRIBUTES = ("active", "preferred")

#: Every node attribute, in the order tables and exports show them.
NODE_ATTRIBUTES = (*SOURCE_ATTRIBUTES, *BRANCH_ATTRIBUTES)

#: The texts (str or None): most of a file's bytes.
TEXT_ATTRIBUTES = ("prompt", "system", "response")

#: Ordered part dicts (`convgraph.parts`), or None for a plain prompt/response.
PARTS = "parts"

#: What a `text=False` read leaves out (None): the texts and the parts.
CONTENT_ATTRIBUTES = (*TEXT_ATTRIBUTES, PARTS)

#: The usage figures (int or None), which totals add up.
INTEGER_ATTRIBUTES = ("input_tokens", "output_tokens", "duration_ms")

#: How many tool calls the run made (0 where none, None where unknown).
TOOL_CALLS = "tool_calls"

#: The tools the run called, each once in first-call order, joined by ", ".
TOOLS = "tools"

INTEGER_COLUMNS = (*INTEGER_ATTRIBUTES, TOOL_CALLS)

#: Cache reads and writes (within input_tokens), last where nodes carry them.
CACHE_ATTRIBUTES = ("cache_read_tokens", "cache_write_tokens")

SOURCE_COLUMNS = ("id", "tree_id", "parent_id", *SOURCE_ATTRIBUTES)

NODE_COLUMNS = (*SOURCE_COLUMNS, *BRANCH_ATTRIBUTES)

#: Each node's parent row (-1 for none), where a reader found it on its own
#: arrays: `Forest` takes it instead of hashing every `parent_id` again.
PARENT_ROWS = "_parent_row"

CATEGORY_COLUMNS = ("tree_id", "conversation_id", "model", "source")

#: `string[pyarrow]` columns (`sources.tables.string_dtype`), object without pyarrow.
STRING_COLUMNS = ("id", "parent_id", "datetime_utc", "prompt", "system", "response")

# The statistics tables' columns, so that the CLI names them without pandas.

#: What the branches the user left spent, and their share of the tokens.
RETRY_COLUMNS = ("abandoned_input_tokens", "abandoned_output_tokens", "abandoned_share")

COST_COLUMNS = ("cost_usd", "abandoned_cost_usd")

#: `conversation_table`'s columns, also the keys of `summary`.
CONVERSATION_COLUMNS = (
    "tree_id",
    "name",
    "nodes",
    "roots",
    "leaves",
    "max_depth",
    "branch_points",
    "branching_factor_avg",
    "branching_factor_max",
    "first_datetime",
    "last_datetime",
    "models",
    *INTEGER_ATTRIBUTES,
    TOOL_CALLS,
    TOOLS,
    "active_path_length",
    "abandoned_branches",
    *RETRY_COLUMNS,
)

BRANCH_COLUMNS = (
    "tree_id",
    "leaf_id",
    "root_id",
    "length",
    *INTEGER_ATTRIBUTES,
    "models",
)

#: What `node_table` adds to the nodes' own columns.
NODE_FIGURES = ("depth", "children", "is_root", "is_leaf")

#: A dataset partition's tree name column; also GraphML's key of the name.
TREE_NAME = "tree_name"

#: A subagent's mark (a part key, an agent table's column); the agents' sources.
SIDECHAIN = "sidechain"
AGENT_SOURCES = ("claude-code", "codex", "gemini-cli", "copilot-cli")
