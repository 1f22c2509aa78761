"""One question of an answer run: the answer beside its passages with citations linked, statement verdicts,
each metric's method and notes, and questions of every kind (unanswerable, failed, refused, odd details)."""

from __future__ import annotations

from django.urls import reverse

from evaluation.dashboard import answer_question_reads
from evaluation.models import QuestionResult
from tests.dashboard.answer_runs_support import (
    JUDGED,
)
from tests.dashboard.conftest import question_url, text_of

# --- one question ------------------------------------------------------------------------------------------


def test_a_question_shows_the_answer_beside_its_passages_with_citations_linked(alice, world, answer_batch):
    page = alice.get(question_url(answer_batch.judged, 0))
    assert page.status_code == 200
    assert [t.name for t in page.templates][0] == "dashboard/answer_question.html"
    view = page.context["view"]
    assert view.segments == [
        ("Refunds are accepted within 30 days [", None),
        ("1", 1),
        ("].\nThey go to the original card [", None),
        ("1", 1),
        (", ", None),
        ("2", 2),
        ("].", None),
    ]
    html = page.content.decode()
    layout = html.index('class="answer-layout"')
    answer_at, passages_at = html.index('class="card answer-pane"'), html.index('class="passages-pane"')
    assert layout < answer_at < passages_at  # one grid: the answer, then the passages beside it
    assert html.count('class="cite" href="#passage-1" data-cite="1"') == 2
    assert 'class="cite" href="#passage-2" data-cite="2"' in html
    assert 'id="passage-1"' in html and 'id="passage-2"' in html
    passages = {p.number: p for p in view.passages}
    assert passages[1].cited and passages[1].expected and passages[1].relevant is True
    assert passages[2].cited and not passages[2].expected and passages[2].relevant is False
    assert passages[1].title == "Refunds" and passages[1].exists
    assert reverse("dashboard:document", args=["handbook", "refunds"]) in html
    assert [(c.number, c.supported) for c in view.citations] == [(1, True), (2, False)]


def test_answer_segments_link_only_known_passages_and_keep_the_text(db):
    segments = answer_question_reads.answer_segments("A [1]. B [2, 7]. C [x] [3]", [1, 2, 3])
    assert "".join(piece for piece, _ in segments) == "A [1]. B [2, 7]. C [x] [3]"
    assert [(piece, n) for piece, n in segments if n] == [("1", 1), ("2", 2), ("3", 3)]
    assert answer_question_reads.answer_segments("", [1]) == []
    assert answer_question_reads.answer_segments("<b>[1]</b>", [1]) == [
        ("<b>[", None),
        ("1", 1),
        ("]</b>", None),
    ]


def test_the_answer_text_is_escaped(alice, world, answer_batch):
    QuestionResult.objects.filter(run=answer_batch.judged, position=0).update(
        answer="<script>alert(1)</script> Refunds [1]."
    )
    page = alice.get(question_url(answer_batch.judged, 0))
    assert b"<script>alert(1)</script>" not in page.content
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in page.content


def test_a_question_shows_statement_verdicts_and_each_metrics_method_and_notes(alice, world, answer_batch):
    page = alice.get(question_url(answer_batch.judged, 0))
    judgements = {j.name: j for j in page.context["view"].judgements}
    assert list(judgements) == list(JUDGED)
    faithfulness = judgements["faithfulness"]
    assert [(s.text, s.verdict, s.number) for s in faithfulness.statements] == [
        ("Refunds are accepted within 30 days.", True, 1),
        ("They go to the original card.", True, 1),
    ]
    assert judgements["context_recall"].statements[0].verdict is True
    assert judgements["answer_relevancy"].other == [("focus", "1.0"), ("question_coverage", "0.9")]
    assert judgements["answer_relevancy"].method_text == "LLM judge"
    text = text_of(page)
    assert "Faithfulness · 2 of 2 statements supported" in text
    assert "supported Refunds are accepted within 30 days." in text
    assert "question_coverage 0.9" in text  # a detail key the page does not know, as a key/value list

    failed = alice.get(question_url(answer_batch.judged, 1))
    text = text_of(failed)
    assert "judge failed (timeout after 30 s): scored by the heuristic" in text
    assert "not supported Express shipping arrives within a week." in text
    assert "Why it failed faithfulness 0.40 < 0.6" in text

    unreadable = alice.get(question_url(answer_batch.judged, 7))
    row = {j.name: j for j in unreadable.context["view"].judgements}["faithfulness"]
    assert row.value is None and row.excluded == "unreadable" and row.method == "llm-judge"
    assert ("error", "not JSON") in row.other
    assert "faithfulness — LLM judge excluded: unreadable" in text_of(unreadable)


def test_a_retrieval_failure_shows_the_missing_document_reasons_and_warnings(alice, world, answer_batch):
    page = alice.get(question_url(answer_batch.judged, 2))
    assert page.context["diagnosis"] == "retrieval"
    view = page.context["view"]
    assert view.reasons == ["expected document not retrieved: warranty", "nothing retrieved is relevant"]
    assert len(view.warnings) == 1 and view.warnings[0].startswith("golden-set check:")
    text = text_of(page)
    assert "missing warranty — Warranty" in text
    assert "Why it failed expected document not retrieved: warranty" in text
    assert "verify the golden record" in text
    hit = alice.get(question_url(answer_batch.judged, 0))
    assert "retrieved at rank 1 refunds — Refunds" in text_of(hit)


def test_unanswerable_error_and_refused_questions_render(alice, world, answer_batch):
    run = answer_batch.judged
    declined = alice.get(question_url(run, 3))
    assert declined.status_code == 200
    assert "the question is unanswerable from the collection" in text_of(declined)
    assert "refused declined to answer" in text_of(declined)
    error = alice.get(question_url(run, 5))
    assert error.status_code == 200 and error.context["diagnosis"] == "error"
    assert "no answer: the model endpoint answered 503" in text_of(error)
    assert "No answer was written." in text_of(error)


def test_a_question_with_odd_details_still_renders(alice, world, answer_batch):
    """Details are read defensively: wrong types, missing keys and unknown keys never break the page."""
    QuestionResult.objects.filter(run=answer_batch.judged, position=0).update(
        judgements={
            "faithfulness": {"value": 0.5, "detail": {"statements": "not a list", "extra": [1, 2]}},
            "citation_precision": {"value": 1.0, "method": "llm-judge", "detail": {"citations": [{}, 3]}},
            "context_relevancy": {"detail": {"passages": [{"number": "2", "relevant": "yes"}]}},
            "answer_relevancy": "broken",
            "novel_metric": {"value": 0.25, "method": "heuristic", "detail": {"why": {"nested": True}}},
        },
        context=[{"text": "A passage without a number"}, "not a passage"],
        citations=[{"statement": "no number"}],
    )
    page = alice.get(question_url(answer_batch.judged, 0))
    assert page.status_code == 200
    judgements = {j.name: j for j in page.context["view"].judgements}
    assert judgements["faithfulness"].statements == []
    assert judgements["faithfulness"].other == [("extra", "[1, 2]")]
    assert judgements["citation_precision"].citations[0].number is None
    assert judgements["context_relevancy"].passages[0].number == 2
    assert judgements["context_relevancy"].passages[0].verdict is None
    assert judgements["novel_metric"].value == 0.25
    assert ("why", '{"nested": true}') in judgements["novel_metric"].other
    assert [p.anchor for p in page.context["view"].passages] == ["passage-x1"]
