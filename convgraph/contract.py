"""The node contract (docs/design.md#the-node-contract): which attributes
every node carries.

One place for the names, so that the readers, the forest, the exporters and
the statistics agree on them without importing each other.
"""

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

#: Source attributes only some sources have, after the contract's columns in
#: their nodes tables: where a coding agent's turn ran, its working directory
#: (`project`) and git branch (`git_branch`), each str or None. A source
#: that has them gives them in a whole-file read and in a tree read by id
#: alike (`convgraph.sources.agents.files.AGENT_ATTRIBUTES` begins with
#: them), and the trees built from it carry them after `NODE_ATTRIBUTES`
#: (so the JSON exports write them: docs/json-schema.md). Other sources'
#: tables, trees and exports have no such keys (no nulls for every chat and
#: llm file).
PLACE_ATTRIBUTES = ("project", "git_branch")

#: The attributes of a node's place among its branches, which the forest
#: attaches after reading: `active` (bool: on the path from its root to the
#: branch last used), and the user's branch notes from convgraph's own table,
#: `note` (str or None) and `preferred` (bool: the answer preferred among its
#: siblings).
BRANCH_ATTRIBUTES = ("active", "note", "preferred")

#: The branch attributes that are booleans (False, never None, in a forest).
BOOLEAN_ATTRIBUTES = ("active", "preferred")

#: Every node attribute, in the order tables and exports show them.
NODE_ATTRIBUTES = (*SOURCE_ATTRIBUTES, *BRANCH_ATTRIBUTES)

#: The texts: most of a database's bytes, left out by `text=False` reads.
#: Each is str or None.
TEXT_ATTRIBUTES = ("prompt", "system", "response")

#: A node's content as ordered parts (`convgraph.parts`): a list of part
#: dicts, or None where the node is only its prompt and its response. An
#: object column in tables.
PARTS = "parts"

#: What a `text=False` read leaves out (None): the texts and the parts.
CONTENT_ATTRIBUTES = (*TEXT_ATTRIBUTES, PARTS)

#: The usage figures, integers (or None): nullable Int64 in tables, and what
#: a branch or a tree adds up (`convgraph.model.tree.node_totals`).
INTEGER_ATTRIBUTES = ("input_tokens", "output_tokens", "duration_ms")

#: How many tool calls the node's run made: an integer (0 where none; None
#: only where the source cannot tell), nullable Int64 in tables like the
#: usage figures, but not one of them. Read by `text=False` reads too.
TOOL_CALLS = "tool_calls"

#: The names of the tools the run called, each once, in first-call order,
#: joined by ", " (`convgraph.parts.tool_names`); None where none. An object
#: column (str or None), read by `text=False` reads too.
TOOLS = "tools"

#: Every integer attribute: nullable Int64 in tables.
INTEGER_COLUMNS = (*INTEGER_ATTRIBUTES, TOOL_CALLS)

#: The columns of a source reader's nodes table: the node's id, the id of the
#: tree it belongs to, its parent's id as stored, then the source attributes.
SOURCE_COLUMNS = ("id", "tree_id", "parent_id", *SOURCE_ATTRIBUTES)

#: The columns of `Forest.nodes`, in order: the source's columns (the parent
#: checked), then the branch attributes.
NODE_COLUMNS = (*SOURCE_COLUMNS, *BRANCH_ATTRIBUTES)

#: A column a reader may add to its nodes table: each node's parent row (-1
#: for none, or a parent id that names no row), where the reader found the
#: parents on its own arrays. `Forest` takes it instead of looking every
#: `parent_id` up again (a hash of a million strings), then drops it.
PARENT_ROWS = "_parent_row"

#: The columns of few distinct values, pandas categories in tables.
CATEGORY_COLUMNS = ("tree_id", "conversation_id", "model", "source")

#: The string columns of many distinct values (str or missing): pandas'
#: `string[pyarrow]` in tables where pyarrow is installed
#: (`pd.StringDtype("pyarrow")`, Arrow's `large_string` underneath;
#: `convgraph.sources.tables.string_dtype`), so a million ids, times and texts
#: cost Arrow's bytes and not a Python object each, and pandas' string
#: methods give pandas' answers (`.str.split("x").str[0]` works, where on
#: `pd.ArrowDtype(pa.string())` it did not); object columns (str or None)
#: where it is not. A missing value is `pd.NA` in an Arrow column: the
#: trees, records and exports built from the table give None for it. The
#: rest (`parts`, `tools`, a source's own columns) are object columns.
STRING_COLUMNS = ("id", "parent_id", "datetime_utc", "prompt", "system", "response")

# -- the statistics tables' columns ------------------------------------------
# Named here, with the node's, so that the command line and the Parquet
# dataset can name them without importing the statistics (and pandas).

#: What the branches the user left spent (`convgraph.analysis.abandoned.
#: abandoned_work_nodes_table`: a retry, an edited prompt, a regenerated answer),
#: beside the totals: their input and output tokens (sums like the usage
#: figures', 0 where the tree has the figure but no branch left does), and
#: their share of the tree's tokens, input and output together (a float from
#: 0 to 1; null where the tree counts no token).
RETRY_COLUMNS = ("abandoned_input_tokens", "abandoned_output_tokens", "abandoned_share")

#: What `convgraph stats --cost` adds to the conversations table: each tree's
#: cost and the cost of its branches left, in US dollars
#: (`convgraph.analysis.usage.tree_costs`, priced as `stats --by` prices).
COST_COLUMNS = ("cost_usd", "abandoned_cost_usd")

#: The columns of `convgraph.analysis.stats.conversation_table`, in order:
#: also the keys of `convgraph.analysis.stats.summary`, which computes the
#: same figures for one tree.
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

#: The columns of `convgraph.analysis.stats.branch_table`, in order.
BRANCH_COLUMNS = (
    "tree_id",
    "leaf_id",
    "root_id",
    "length",
    *INTEGER_ATTRIBUTES,
    "models",
)

#: The columns `convgraph.analysis.stats.node_table` adds to the nodes' own:
#: the node's place in its tree.
NODE_FIGURES = ("depth", "children", "is_root", "is_leaf")

#: The column of a Parquet dataset's node table that holds each node's tree's
#: name (`conversation_table`'s `name`), so that a partition carries it; also
#: the GraphML key of a tree's name.
TREE_NAME = "tree_name"
