"""One question answered from retrieved passages: `POST /search/answer`, and the pieces answer evaluation
(evaluation.answers.evaluate) runs each golden question through: the models a request names, retrieval as
numbered passages, the built-in writer or an answering target, and the rows an answer is stored as."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from evalsite.errors import EvalsiteError
from evalsite.llm.cache import DbCallCache
from evalsite.llm.client import ChatClient
from evalsite.llm.model_choice import resolve_model
from evaluation.answers import writer as answer_writer
from evaluation.answers.configs import AnswerConfig
from evaluation.retrieval.read_path import CollectionSearch
from evaluation.runs.selectors import GoldenQuestion
from evaluation.targets.callers import TargetClient, TargetError
from goldenset.generation import PageText
from goldenset.models import Collection
from goldenset.selectors import first_pages, pages_by_id

EXTRACTIVE, HEURISTIC = "extractive", "heuristic"  # the offline answer and judge, as a request names them


def answer_model(requested: str | None, field: str, *, offline: bool = False) -> str | None:
    """The answering model for a configuration; None = the extractive answer."""
    return None if offline else resolve_model(requested, field=field, offline=EXTRACTIVE)


def judge_model_of(requested: str | None, *, offline: bool = False) -> str | None:
    """The judge model; None = the heuristic judge."""
    return None if offline else resolve_model(requested, field="judge_model", offline=HEURISTIC)


# --- retrieval -------------------------------------------------------------------------------------------------


def retrieve(
    engine: CollectionSearch, question: str, config: AnswerConfig, at=None
) -> tuple[list[str], list[float], list[int]]:
    """(document keys, scores, page pks) of the top_k documents, each with its best page."""
    hits = engine.rank(question, config.run, config.top_k, at=at)
    return hits.keys(qualified=len(engine.collections) > 1), hits.scores, engine.page_ids(hits)


def load_passages(
    page_ids: Sequence[int], keys: Sequence[str], pages: Mapping[int, PageText] | None = None
) -> list[answer_writer.Passage]:
    """The retrieved pages as numbered passages (1 = the best), under the same document keys as the ranking;
    `pages` when the caller loaded them already (an evaluation loads every retrieved page at once)."""
    pages = pages_by_id(page_ids) if pages is None else pages
    return [
        answer_writer.Passage(
            number=i,
            document_id=key,
            page_number=pages[pk].number,
            title=pages[pk].title,
            text=pages[pk].text,
        )
        for i, (pk, key) in enumerate(zip(page_ids, keys, strict=True), start=1)
        if pk in pages
    ]


def chat_client(cache: DbCallCache | None = None) -> ChatClient:
    return ChatClient.from_settings(cache=cache)


def write_answer(
    client: ChatClient | None, model: str | None, question: str, passages, groundedness: str
) -> answer_writer.Answer:
    if model is None or client is None:
        return answer_writer.extractive_answer(question, passages, groundedness)
    return answer_writer.llm_answer(client, model, question, passages, groundedness)


def answer_question(
    *, collections: Sequence[Collection], question: str, config: AnswerConfig, offline: bool = False
) -> dict[str, Any]:
    """POST /search/answer: the grounded answer users get, with its citations and passages."""
    started = time.perf_counter()
    model = answer_model(config.model, "model", offline=offline)
    engine = CollectionSearch(collections)
    keys, scores, page_ids = retrieve(engine, question, config)
    passages = load_passages(page_ids, keys)
    if model is None:
        answer = write_answer(None, None, question, passages, config.groundedness)
    else:
        with chat_client(DbCallCache()) as client:
            answer = write_answer(client, model, question, passages, config.groundedness)
            client.cache.flush()  # type: ignore[union-attr]
    if answer.error:
        raise EvalsiteError("llm-unavailable", f"The answer could not be written: {answer.error}", status=503)
    return {
        "question": question,
        "answer": answer.text,
        "refused": answer.refused,
        "method": answer.method,
        "model": answer.model,
        "groundedness": config.groundedness,
        "support": answer.support,
        "citations": [citation_row(c) for c in answer.citations],
        "passages": [passage_row(p, score) for p, score in zip(passages, scores, strict=False)],
        "config": config.as_dict(),
        "usage": {"prompt_tokens": answer.prompt_tokens, "completion_tokens": answer.completion_tokens},
        "took_ms": round((time.perf_counter() - started) * 1000, 1),
    }


def citation_row(c: answer_writer.Citation) -> dict:
    return {"number": c.number, "document_id": c.document_id, "statement": c.statement}


def passage_row(p: answer_writer.Passage, score: float | None = None) -> dict:
    out = {"number": p.number, "document_id": p.document_id, "page_number": p.page_number, "title": p.title}
    if score is not None:
        out["score"] = score
    return {**out, "text": p.text}


# --- answering targets ---------------------------------------------------------------------------------------


def target_answer(
    caller: TargetClient, q: GoldenQuestion, config: AnswerConfig
) -> tuple[answer_writer.Answer, list[str], list[float], list[answer_writer.Passage], bool]:
    """(answer, the passages' document ids, their scores (NaN: a target gives none), the passages, whether
    their texts are still to be read) of an answering target, judged as a built-in answer is. Citations are the answer's [n] markers (numbered in
    passage order), else the ids the target says it cites, each attached to the whole answer. Passages
    without mapped texts have text "": the caller reads them from the collection (the document's first
    page). A failed call is the answer's error, so the question is diagnosed `error` and left out of every
    metric."""
    name = caller.spec.name
    try:
        rag = caller.answer(q.question, config.top_k, q.key or str(q.entry_id or ""))
    except TargetError as exc:
        failed = answer_writer.Answer(
            text="", refused=False, citations=(), method="target", model=name, support=-1.0,
            latency_ms=exc.latency_ms or 0.0, error=f"target-failed: {exc.problem}",
        )  # fmt: skip
        return failed, [], [], [], False
    ids = rag.passage_ids
    texts = rag.passage_texts if rag.passage_texts is not None else [""] * len(ids)
    passages = [
        answer_writer.Passage(number=i, document_id=doc, page_number=1, title="", text=text)
        for i, (doc, text) in enumerate(zip(ids, texts, strict=True), start=1)
    ]
    citations = answer_writer.parse_citations(rag.text, passages)
    if not citations and rag.cited_ids:
        statement = answer_writer.strip_markers(rag.text)
        number_of: dict[str, int] = {}
        for p in passages:
            number_of.setdefault(p.document_id, p.number)
        citations = tuple(
            answer_writer.Citation(number_of[doc], doc, statement)
            for doc in dict.fromkeys(rag.cited_ids)
            if doc in number_of
        )
    answer = answer_writer.Answer(
        text=rag.text,
        refused=rag.refused if rag.refused is not None else answer_writer.looks_like_refusal(rag.text),
        citations=citations,
        method="target",
        model=name,
        support=-1.0,
        latency_ms=rag.latency_ms,
        prompt_tokens=rag.prompt_tokens,
        completion_tokens=rag.completion_tokens,
        unknown_citations=answer_writer.unknown_citations(rag.text, passages),
    )
    return answer, ids, [math.nan] * len(ids), passages, rag.passage_texts is None and bool(ids)


def first_page_texts(collection: Collection, document_ids: set[str]) -> dict[str, str]:
    """Each of these documents' first page text, by document id (an id the collection lacks is absent)."""
    return {document: page.text for document, page in first_pages(collection, document_ids).items()}
