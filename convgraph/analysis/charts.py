"""Charts of a usage table: in the terminal (plotext) or as a PNG or SVG file
(matplotlib), every label drawn as text."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from convgraph.analysis.usage import USAGE_COLUMNS
from convgraph.writing import written

#: The keys a chart may spread along its x axis, in order of preference.
TIME_KEYS = ("day", "week", "month")
#: The picture formats `write_chart` writes, by suffix.
CHART_FORMATS = ("png", "svg")


def chart_series(table: pd.DataFrame, measure: str) -> pd.DataFrame:
    """A usage table as a chart draws it: a row per bar (the time key, or the
    first key), a column per series (the other keys), `measure` summed, 0 where
    a bar has none of a series; a missing key is "none"."""
    keys = [column for column in table.columns if column not in USAGE_COLUMNS]
    along = next((key for key in TIME_KEYS if key in keys), keys[0])
    others = [key for key in keys if key != along]
    labelled = table.fillna({key: "none" for key in keys})
    values = labelled[measure].astype("Float64").fillna(0).astype(float)
    labelled = labelled.assign(**{measure: values})
    if not others:
        return labelled.groupby(along, sort=True)[[measure]].sum()
    series = labelled[others].astype(str).agg(" ".join, axis=1)
    return (
        labelled.assign(series=series)
        .pivot_table(
            index=along,
            columns="series",
            values=measure,
            aggfunc="sum",
            fill_value=0,
            sort=True,
        )
        .rename_axis(columns=None)
    )


def terminal_chart(
    table: pd.DataFrame, measure: str, width: int, height: int, color: bool = True
) -> str:
    """A stacked bar chart of `chart_series` by plotext, `width` by `height`
    cells; one line for a table of nothing. Raises ImportError without plotext."""
    import plotext

    frame = chart_series(table, measure)
    if frame.empty:
        # plotext fails on no bars.
        return f"{measure}: no usage to draw\n"
    figure = plotext.figure
    figure.clear.all()
    figure.plot_size(width, height)
    figure.title(measure)
    labels = [str(label) for label in frame.index]
    bottom = np.zeros(len(frame))
    for name in frame.columns:
        top = bottom + frame[name].to_numpy(dtype=float)
        bars = figure.bar(labels, bottom.tolist(), top.tolist())
        if len(frame.columns) > 1:
            bars.label(str(name))
        figure.draw(bars)
        bottom = top
    drawn = str(figure.build())
    figure.clear.all()
    return drawn if color else plotext.uncolorize(drawn)


def write_chart(table: pd.DataFrame, measure: str, path: str) -> None:
    """`terminal_chart`'s chart as a .png or .svg file by matplotlib, pyplot's state
    untouched. Raises ValueError for another suffix, ImportError without matplotlib."""
    suffix = path.rpartition(".")[2].lower()
    if suffix not in CHART_FORMATS:
        raise ValueError(f"{path}: a chart is written as .png or .svg")
    import matplotlib
    from matplotlib.figure import Figure

    frame = chart_series(table, measure)
    # An SVG's words stay text; a label is data, so `$` starts no mathtext
    # (a model named `my$\frac{$model` would fail to parse).
    settings: dict[str, Any] = {
        "svg.fonttype": "none",
        "text.parse_math": False,
        "text.usetex": False,
    }
    with matplotlib.rc_context(settings):  # type: ignore[arg-type]
        figure = Figure(figsize=(max(6.0, 0.5 * len(frame)), 4.5), layout="constrained")
        axes = figure.subplots()
        if not frame.empty:
            frame.plot.bar(stacked=True, ax=axes, legend=len(frame.columns) > 1)
        axes.set_title(measure)
        axes.set_xlabel(str(frame.index.name))
        with written(path) as stream:
            figure.savefig(stream, format=suffix)
