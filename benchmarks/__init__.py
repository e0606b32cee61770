"""convgraph's benchmarks: synthetic llm databases and the measurements on them.

`python -m benchmarks` runs the suite (see `benchmarks/suite.py`);
`benchmarks.synthetic` builds the databases it measures.
"""
