"""A synthetic corpus and a scripted question-writing "model" for generation tests and the benchmark.

Each document describes one made-up company (a unique invented name, a founding year, a city, a product), so a
question per page is distinct and checkable. `scripted_writer(messages)` plays the chat model for the scripted
server: it reads the passage out of the generation prompt and answers the JSON a good model would. Pages whose
text holds a marker word get a bad answer instead, one per quality-gate reason, so tests can inject each fault.
"""

from __future__ import annotations

import json
import re

_SYLLABLES = ["ka", "lo", "mir", "ven", "dus", "pra", "tel", "qua", "zor", "bin", "fe", "rok", "sul", "ny"]
_CITIES = ["Lisbon", "Osaka", "Denver", "Tallinn", "Recife", "Perth", "Bergen", "Quito", "Leeds", "Izmir"]
_PRODUCTS = ["ceramic valves", "solar kettles", "paper drones", "glass bicycles", "wool sensors"]

# Marker word in a page -> the bad answer the scripted model gives for it (and the reason the gate gives).
FAULTS: dict[str, tuple[str, str]] = {
    "Xpassage": (
        "passage_dependent",
        '{"question": "According to the passage, when was it founded?", "answer": "It was founded in 1901."}',
    ),
    "Xunreadable": ("unreadable", "I am sorry, I cannot write a question for this passage."),
    "Xunsupported": (
        "unsupported_answer",
        '{"question": "Which river flows past the Xunsupported '
        'headquarters in winter?", "answer": "The Danube carries barges of coal past it."}',
    ),
    "Xgiveaway": (
        "answer_giveaway",
        '{"question": "Was Xgiveaway founded in the year 1950 by sailors?", '
        '"answer": "Xgiveaway founded 1950"}',
    ),
    "Xempty": ("empty", '{"question": "", "answer": ""}'),
}


def company_name(i: int) -> str:
    a, b, c = i % 14, (i // 14) % 14, (i // 196) % 14
    return (_SYLLABLES[a] + _SYLLABLES[b] + _SYLLABLES[(c + a) % 14]).capitalize()


def company_text(i: int) -> str:
    name = company_name(i)
    year = 1850 + (i * 37) % 170
    city = _CITIES[i % len(_CITIES)]
    product = _PRODUCTS[i % len(_PRODUCTS)]
    return (
        f"{name} is a manufacturer of {product} with its head office in {city}. "
        f"{name} was founded in {year} by a family of clockmakers who moved there from the coast. "
        f"Today the firm employs {120 + i * 7} people and exports most of its output to neighbouring countries."
    )


def synthetic_corpus(n: int, *, faults: tuple[str, ...] = ()) -> dict[str, str]:
    """n documents company-000 ... ; the first len(faults) get a fault marker each (see FAULTS)."""
    docs = {}
    for i in range(n):
        text = company_text(i)
        if i < len(faults):
            text = f"{faults[i]} notes. " + text.replace(company_name(i), faults[i])
        docs[f"company-{i:03d}"] = text
    assert len({company_name(i) for i in range(n)}) == n, "company names must be unique"
    return docs


_PASSAGE = re.compile(r"<<<\n(.*?)\n>>>", re.DOTALL)
_FOUNDED = re.compile(r"(\w+) was founded in (\d{4})")


def scripted_writer(messages: list[dict]) -> str:
    user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    found = _PASSAGE.search(user)
    passage = found.group(1) if found else user
    for marker, (_, answer) in FAULTS.items():
        if marker in passage:
            return answer
    match = _FOUNDED.search(passage)
    if not match:
        return "No question."
    name, year = match.groups()
    return (
        "Here you are:\n```json\n"
        + json.dumps(
            {
                "question": f"In which year was the company {name} founded?",
                "answer": f"{name} was founded in {year}.",
            }
        )
        + "\n```"
    )
