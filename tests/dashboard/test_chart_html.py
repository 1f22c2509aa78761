"""evaluation.dashboard.chart_html: a chart as the pages embed it: its title as the figure's caption, its data for
plotly.js in a JSON script, and its text alternative (a table of its figures, or a note naming the page's table).

No database, no browser (the tour in tests/browser/test_page_widths_browser.py checks every chart of every page).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from evaluation.dashboard.chart_html import LISTED_POINTS, figure_html, figure_table, page_figure
from evaluation.dashboard.charts import CompareSeries, TrendPoint, compare_figure, roc_figure, trends_figure
from evaluation.dashboard.study_charts import heatmap_figure
from evaluation.studies.space import parse_space
from tests.dashboard.study_support import REQUEST, synthetic_trials


def cells(html: str) -> list[list[str]]:
    return [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row) for row in re.findall(r"<tr>(.*?)</tr>", html)]


def plotly_json(html: str, div_id: str) -> dict:
    match = re.search(rf'<script type="application/json" id="{div_id}-data">(.*?)</script>', html, re.DOTALL)
    assert match, html[:300]
    return json.loads(match.group(1))


def test_the_title_is_the_caption_and_the_plot_draws_none():
    figure = compare_figure(
        [CompareSeries("bm25 & <b>co</b>", {"mrr": 0.5}, {"mrr": (0.4, 0.6)}, 3)], ["mrr"]
    )
    html = figure_html(figure, "compare-chart")
    caption = re.search(r'<figcaption class="plot-title" id="compare-chart-title">(.*?)</figcaption>', html)
    assert caption and caption.group(1) == "Metrics by configuration (95% bootstrap CI over 3 questions)"
    assert '<figure class="plot" aria-labelledby="compare-chart-title">' in html
    drawn = plotly_json(html, "compare-chart")
    assert (
        "title" not in drawn["layout"] and drawn["layout"]["margin"]["t"] == 30
    )  # room for the toolbar only
    assert drawn["config"] == {"displaylogo": False, "responsive": True}
    assert "Plotly.newPlot" not in html  # dashboard.js draws it, after the deferred plotly.js


def test_a_chart_without_a_table_on_its_page_carries_its_figures():
    series = [
        CompareSeries("bm25", {"mrr": 0.5, "ndcg@10": 0.25}, {}, 3),
        CompareSeries("<vector>", {"mrr": 0.75}, {}, 3),
    ]
    table = figure_table(page_figure(compare_figure(series, ["mrr", "ndcg@10"]).to_plotly_json())[1])
    assert cells(table) == [
        ["metric", "bm25", "&lt;vector&gt;"],
        ["mrr", "0.500", "0.750"],
        ["ndcg@10", "0.250", "—"],
    ]
    html = figure_html(compare_figure(series, ["mrr", "ndcg@10"]), "c")
    assert '<details class="plot-data"><summary>The chart\'s figures as a table</summary>' in html


def test_a_chart_whose_figures_a_table_holds_says_so_instead():
    html = figure_html(
        compare_figure([CompareSeries("a", {"mrr": 0.5}, {}, 3)], ["mrr"]), "c", table_id="means"
    )
    assert '<p class="visually-hidden" data-table="means">' in html and "<details" not in html


def test_a_long_scatter_trace_is_summed_up_and_a_reference_line_left_out():
    start = datetime(2025, 1, 1, tzinfo=UTC)
    points = [
        TrendPoint("bm25", start + timedelta(days=i), i / 100, i, f"/runs/{i}/")
        for i in range(LISTED_POINTS + 5)
    ]
    rows = cells(figure_table(trends_figure(points, "ndcg@10").to_plotly_json()))
    assert rows[0] == ["", "run date (UTC)", "ndcg@10 (0–1)"]
    assert [row[0] for row in rows[1:]] == ["points", "first", "last", "lowest", "highest"]
    assert rows[1][1] == str(LISTED_POINTS + 5) and rows[5][2] == "0.440"
    roc = figure_table(
        roc_figure([{"judge": "lexical", "auc": 0.75, "roc": [(0, 0), (0.5, 1), (1, 1)]}]).to_plotly_json()
    )
    assert "chance" not in roc and cells(roc)[1:] == [["0", "0"], ["0.500", "1"], ["1", "1"]]


def test_a_heatmap_is_a_grid_and_an_empty_chart_says_what_its_note_says():
    dimensions = parse_space(REQUEST["space"])
    figure = heatmap_figure(dimensions, synthetic_trials(), "bm25_k1", "bm25_b", "ndcg@10")
    rows = cells(figure_table(figure))
    assert len(rows) == len(figure["data"][0]["y"]) + 1 and len(rows[0]) == len(figure["data"][0]["x"]) + 1
    empty = figure_table(trends_figure([], "ndcg@10").to_plotly_json())
    assert "No runs in this range" in empty


def test_the_json_cannot_close_its_script():
    series = [CompareSeries("</script><script>alert(1)</script>", {"mrr": 0.5}, {}, 3)]
    html = figure_html(compare_figure(series, ["mrr"]), "evil")
    assert "<script>alert" not in html and html.count("</script>") == 1
