"""Plotly bar charts of counts: a generation job's discarded drafts by reason, and questions by how alike two
runs' rankings are. No Django; they share evaluation.dashboard.charts' layout and palette."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from evaluation.dashboard.charts import PALETTE, base_layout, empty_note

__all__ = ["discard_figure", "similarity_figure"]


def discard_figure(discards: Mapping[str, int], reasons: Sequence[str]) -> go.Figure:
    """Horizontal bars: how many drafts of a generation job the quality gate discarded, per reason.

    One bar per reason in ``reasons`` order (top to bottom), zeros included so that every check shows; a reason
    in ``discards`` but not in ``reasons`` (one a newer gate reports) follows at the end. Each bar carries its
    count as text, so a zero reads as 0, not as a missing bar."""
    names = list(reasons) + [r for r in discards if r not in reasons]
    counts = [int(discards.get(name, 0) or 0) for name in names]
    labels = [html.escape(name.replace("_", " ")) for name in names]
    total = sum(counts)
    traces = [
        {
            "type": "bar",
            "orientation": "h",
            "x": counts,
            "y": labels,
            "text": [str(n) for n in counts],
            "textposition": "outside",
            "cliponaxis": False,
            "marker": {"color": PALETTE[6]},
            "hovertext": [
                f"<b>{label}</b><br>{n} draft{'' if n == 1 else 's'} discarded"
                for label, n in zip(labels, counts, strict=True)
            ],
            "hovertemplate": "%{hovertext}<extra></extra>",
        }
    ]
    layout = base_layout(f"Discarded drafts by reason ({total} in all)", "drafts discarded", "")
    layout["showlegend"] = False
    layout["height"] = 110 + 30 * len(names)
    layout["margin"] = {"l": 20, "r": 40, "t": 50, "b": 50}
    layout["bargap"] = 0.35
    # Whole drafts: integer ticks from zero, with room for the largest bar's text.
    top = max(counts, default=0) * 1.12 + 1
    layout["xaxis"].update(range=[0, top], tickformat="d", tick0=0, automargin=True)
    if top <= 10:
        layout["xaxis"]["dtick"] = 1
    layout["yaxis"] = {
        "type": "category",
        "autorange": "reversed",  # the first reason at the top
        "automargin": True,
    }
    return go.Figure({"data": traces, "layout": layout}, _validate=False)


def similarity_figure(values: Sequence[float], first: str, second: str) -> go.Figure:
    """How many questions' rankings are how alike (rank-biased overlap, in tenths), for two runs."""
    counts = [0] * 10
    for value in values:
        counts[min(9, int(value * 10))] += 1
    labels = [f"{n / 10:.1f}–{(n + 1) / 10:.1f}" for n in range(10)]
    traces = [
        {
            "type": "bar",
            "x": labels,
            "y": counts,
            "text": [str(n) for n in counts],
            "textposition": "outside",
            "cliponaxis": False,
            "marker": {"color": PALETTE[0]},
            "hovertemplate": "RBO %{x}: %{y} question(s)<extra></extra>",
        }
    ]
    title = f"How alike the rankings of {html.escape(first)} and {html.escape(second)} are"
    layout = base_layout(title, "rank-biased overlap (1: the same ranking)", "questions")
    layout["showlegend"] = False
    layout["yaxis"].update(range=[0, max(counts, default=0) * 1.15 + 1], tickformat="d")
    layout["xaxis"]["type"] = "category"
    if not values:
        empty_note(layout, "No question both runs answered")
    return go.Figure({"data": traces, "layout": layout}, _validate=False)
