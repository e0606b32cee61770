"""Measuring and comparing: the statistics tables of a forest (`stats`, and
the same per partition of a Parquet dataset on Dask, `datasets`), and branch
diffs and comparisons within one tree (`diff`).
"""
