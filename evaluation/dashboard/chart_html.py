"""A figure as the dashboard embeds it (no Django): a <figure> whose caption is the chart's title, the plot's data
for plotly.js, and a text alternative.

- The title is the figure's caption, in the page's own text: it wraps on a phone and plotly.js's toolbar (top
  right, in the plot's top margin) never covers it. The plot itself draws no title.
- The data goes in a JSON script element; dashboard.js draws every such plot once plotly.js has loaded, so both
  scripts are deferred and no inline script runs before them.
- The text alternative (WCAG 1.1.1): the chart's figures as a table in a <details> under it, or, where a table of
  the page already holds them (``table_id``), a sentence saying so. A scatter trace of many points is summed up
  (points, first, last, lowest, highest) rather than listed.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.io.json import to_json_plotly

__all__ = ["CONFIG", "LISTED_POINTS", "figure_html", "figure_table", "page_figure"]

CONFIG = {"displaylogo": False, "responsive": True}
LISTED_POINTS = 40  # a scatter trace with more points is summed up in its table
TITLE_ROOM = 30  # px of top margin the title took; the toolbar needs about as much


def _text(markup: Any) -> str:
    """Plain text from plotly's bits of HTML (labels are escaped before they go in): tags out, entities read."""
    text = "" if markup is None else str(markup)
    return html.unescape(re.sub(r"<br\s*/?>", " ", re.sub(r"<(?!br)[^>]+>", "", text))).strip()


def page_figure(figure: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(the title as plain text, the figure without it, its top margin narrowed by the room the title took)."""
    layout = dict(figure.get("layout") or {})
    title = layout.pop("title", None)
    text = _text(title.get("text") if isinstance(title, Mapping) else title)
    margin = dict(layout.get("margin") or {})
    if text and "t" in margin:
        margin["t"] = max(TITLE_ROOM, margin["t"] - TITLE_ROOM)
        layout["margin"] = margin
    return text, {**figure, "layout": layout}


def figure_html(fig: go.Figure | Mapping[str, Any], div_id: str, *, table_id: str | None = None) -> str:
    """The figure as the page embeds it (see the module's docstring); ``table_id``: the id of the page's table that
    holds the chart's figures, else the figure carries a table of its own."""
    raw = fig.to_plotly_json() if isinstance(fig, go.Figure) else dict(fig)
    title, figure = page_figure(raw)
    height = figure["layout"].get("height")
    data = to_json_plotly({"data": figure.get("data", []), "layout": figure["layout"], "config": CONFIG})
    data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    if table_id is not None:
        alternative = f'<p class="visually-hidden" data-table="{table_id}">The chart\'s figures are in the table below.</p>'
    else:
        alternative = (
            '<details class="plot-data"><summary>The chart\'s figures as a table</summary>'
            f"{figure_table(figure)}</details>"
        )
    style = f"height:{height}px; width:100%;" if height else "height:100%; width:100%;"
    caption = (
        f'<figcaption class="plot-title" id="{div_id}-title">{html.escape(title)}</figcaption>'
        if title
        else ""
    )
    return (
        f'<figure class="plot" aria-labelledby="{div_id}-title">{caption}'
        f'<div id="{div_id}" class="plotly-graph-div" style="{style}" data-plotly="{div_id}-data"></div>'
        f'<script type="application/json" id="{div_id}-data">{data}</script>{alternative}</figure>'
    )


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    return html.escape(_text(value))


def _axis(layout: Mapping[str, Any], name: str, default: str) -> str:
    title = (layout.get(name) or {}).get("title") or {}
    return _text(title.get("text") if isinstance(title, Mapping) else title) or default


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], caption: str = "") -> str:
    caption_html = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    header = "".join(f'<th scope="col">{html.escape(h)}</th>' for h in head)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    return (
        f'<div class="table-wrap"><table class="data compact">{caption_html}<thead><tr>{header}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _bars(traces: Sequence[Mapping[str, Any]], layout: Mapping[str, Any]) -> str:
    """Grouped bars: a row per category, a column per trace."""
    horizontal = traces[0].get("orientation") == "h"
    at, value = ("y", "x") if horizontal else ("x", "y")
    categories: list[Any] = []
    for trace in traces:
        categories += [c for c in trace.get(at) or [] if c not in categories]
    columns = []
    for trace in traces:
        by = dict(zip(trace.get(at) or [], trace.get(value) or [], strict=False))
        columns.append([by.get(c) for c in categories])
    head = [
        _axis(layout, f"{at}axis", at),
        *(_text(t.get("name")) or _axis(layout, f"{value}axis", value) for t in traces),
    ]
    return _table(head, [[c, *(col[i] for col in columns)] for i, c in enumerate(categories)])


def _scatter(trace: Mapping[str, Any], layout: Mapping[str, Any]) -> str:
    x_name, y_name = _axis(layout, "xaxis", "x"), _axis(layout, "yaxis", "y")
    points = list(zip(trace.get("x") or [], trace.get("y") or [], strict=False))
    name = _text(trace.get("name"))
    if len(points) <= LISTED_POINTS:
        return _table([x_name, y_name], points, name)
    valued = [p for p in points if p[1] is not None]
    low = min(valued, key=lambda p: p[1]) if valued else (None, None)
    high = max(valued, key=lambda p: p[1]) if valued else (None, None)
    rows = [
        ["points", len(points), ""],
        ["first", *points[0]],
        ["last", *points[-1]],
        ["lowest", *low],
        ["highest", *high],
    ]
    return _table(["", x_name, y_name], rows, name)


def _heatmap(trace: Mapping[str, Any], layout: Mapping[str, Any]) -> str:
    xs, ys, zs = trace.get("x") or [], trace.get("y") or [], trace.get("z") or []
    head = [f"{_axis(layout, 'yaxis', 'y')} \\ {_axis(layout, 'xaxis', 'x')}", *(_text(x) for x in xs)]
    return _table(head, [[y, *(zs[i] if i < len(zs) else [])] for i, y in enumerate(ys)])


def figure_table(figure: Mapping[str, Any]) -> str:
    """The figure's data as HTML tables: one for its bars, one per scatter trace (a reference line drawn with
    ``hoverinfo: skip`` left out), one per heatmap (a table of the page holds a parallel-coordinates plot's); a figure with nothing drawn says what its note says."""
    layout = figure.get("layout") or {}
    traces = [t for t in figure.get("data") or [] if t.get("hoverinfo") != "skip"]
    parts = []
    bars = [t for t in traces if t.get("type") == "bar"]
    if bars:
        parts.append(_bars(bars, layout))
    for trace in traces:
        kind = trace.get("type", "scatter")
        if kind == "scatter":
            parts.append(_scatter(trace, layout))
        elif kind == "heatmap":
            parts.append(_heatmap(trace, layout))
    if parts:
        return "".join(parts)
    notes = [_text(a.get("text")) for a in layout.get("annotations") or []]
    return f'<p class="muted small">{html.escape(" ".join(notes) or "Nothing is drawn.")}</p>'
