"""A scripted answering model and judge for answer-evaluation tests, the benchmark and demos.

`scripted_rag(messages)` plays the chat model behind the scripted server: for an answer prompt it answers with the
first sentence of passage [1], cited, as JSON; for a judge prompt it returns a well-formed judgement that agrees
with everything (every statement supported, every citation supporting, every passage relevant, rating 4). Tests
that need a verdict of their own register a more specific rule before this one. `PASSAGES`: two passages of the
handbook, as the writer and the judges are given them.
"""

from __future__ import annotations

import json
import re

from evaluation.answers.writer import Passage

PASSAGES = [
    Passage(
        1,
        "refunds",
        1,
        "Refund policy",
        "Customers get a full refund within 30 days of purchase. Refunds go to the original card.",
    ),
    Passage(
        2,
        "shipping",
        3,
        "Shipping",
        "Orders ship within two business days. Express shipping arrives the next day.",
    ),
]

_NUMBERED = re.compile(r"^(\d+)\. ", re.MULTILINE)
_PASSAGE_HEAD = re.compile(r"^\[(\d+)\]", re.MULTILINE)


def _after(text: str, heading: str) -> str:
    return text.split(heading, 1)[1] if heading in text else ""


def scripted_rag(messages: list[dict]) -> str:
    user = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
    for heading, index, flag in (
        ("Answer statements:", "statement", "supported"),
        ("Reference statements:", "statement", "supported"),
        ("Citations to check:", "citation", "supports"),
    ):
        if heading in user:
            numbers = [int(n) for n in _NUMBERED.findall(_after(user, heading))]
            return json.dumps({"verdicts": [{index: n, flag: True, "reason": "scripted"} for n in numbers]})
    if "Answer to rate:" in user:
        return json.dumps({"rating": 4, "reason": "scripted"})
    if "Passages to rate:" in user:
        numbers = [int(n) for n in _PASSAGE_HEAD.findall(_after(user, "Passages to rate:"))]
        return json.dumps(
            {"verdicts": [{"passage": n, "relevant": True, "reason": "scripted"} for n in numbers]}
        )
    if user.startswith("Question:") and "Passages:" in user:
        passages = _after(user, "Passages:")
        first = re.search(r"\[1\][^\n]*\n([^\n]+)", passages)
        if not first:
            return json.dumps(
                {"answer": "I cannot answer this from the available documents.", "refused": True}
            )
        sentence = re.split(r"(?<=[.!?])\s", first.group(1).strip(), maxsplit=1)[0].rstrip(".")
        return json.dumps({"answer": f"{sentence} [1].", "refused": False})
    return user


def decline_everything(messages: list[dict]) -> str:
    return json.dumps({"answer": "I cannot answer this from the available documents.", "refused": True})
