"""Generated questions people would ask (issue 15, item 7): the gate's ill_formed check against questions people
wrote and against the old offline template writer's salad, and the offline writer before and after on real pages.

    .venv/bin/python benchmarks/fluency_bench.py [--clapnq DIR] [--cranfield DIR] [--seeds 1,2,3,4,5] [--quick]

1. Questions people wrote, which the check must accept: ClapNQ's 600 (Natural Questions: lower case, no question
   mark, telegraphic) and Cranfield's 225 queries (lower case, a spaced " ." at the end). The share accepted, and
   every rejected one with its message.
2. The old offline template writer (a frozen copy below: "What is known about <three longest words> (<title>)?"
   and "What is X?" from "X is/are/was/were ...") run over every page of ClapNQ and Cranfield: the share of its
   questions the check rejects, per template, with examples of what still passes.
3. Generation as the Generate job does it, without the database: `count` 12 asks for up to 12 x 3 = 36 pages
   (EVALSITE_GENERATE_PAGES_PER_QUESTION), sampled per seed by goldenset.generation.sample_pages, pages cut as
   ingest cuts them (2,000 characters). For each seed: the old writer through the old gate (`well_formed` off),
   the old writer through today's gate, and today's writer (goldenset.clear_sentences) through today's gate:
   pages accepted, the discards, and the pages that offered no clear sentence; then what the new writer asked.
   And over every page of the collection: how many offer a clear sentence, and how many of those pass the gate.

Pure Python (no Django, no database, no network), a few seconds. Without `--clapnq`, ../shared/datasets/clapnq or
the repository's copy in demo/clapnq is used; Cranfield is read from ../shared/datasets/cranfield and its parts are
skipped, saying so, when it is absent. `--quick` runs every step on the first 300 pages and 100 questions of each
set, one seed; any failure exits non-zero.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from goldenset import lexical  # noqa: E402
from goldenset.duplicates import DuplicateIndex  # noqa: E402
from goldenset.fluency import ill_formed  # noqa: E402
from goldenset.generation import (  # noqa: E402
    Draft,
    Outcome,
    PageText,
    QuestionWriter,
    TemplateQuestionWriter,
    generate,
    sample_pages,
)
from goldenset.quality import GateLimits, Verdict, check  # noqa: E402
from goldenset.text import split_pages  # noqa: E402
from goldenset.vocabulary.sentences import TEMPLATE_SENTENCE_END  # noqa: E402

SHARED = ROOT.parent / "shared" / "datasets"
DEMO_CLAPNQ = ROOT / "demo" / "clapnq"
PAGE_CHARS = 2000  # EVALSITE_PAGE_CHARS's default: how ingest cuts a document into pages
MIN_PAGE_CHARS = 120  # goldenset.services.generate.MIN_PAGE_CHARS
COUNT, PAGES_PER_QUESTION = 12, 3  # a Generate request of 12 questions tries up to 36 pages


# --- the old offline template writer, frozen as it was before the ill_formed check (commit 04417c6) -----------

_OLD_DEFINITION = re.compile(
    r"^(?:(?P<article>the|a|an)\s+)?(?P<subject>[^,;:()]{2,60}?)\s+(?P<verb>is|are|was|were)\s+(?P<rest>.+)$",
    re.IGNORECASE | re.DOTALL,
)
_OLD_VAGUE = frozenset(
    {"it", "this", "that", "these", "those", "they", "he", "she", "there", "here", "which"}
)
_OLD_CLAUSE = frozenset({"that", "which", "who", "whom", "whose", "where", "when", "if", "because", "as"})


def _old_best_sentence(text: str) -> str | None:
    best: tuple[int, str] | None = None
    for sentence in TEMPLATE_SENTENCE_END.split(" ".join(text.split())):
        if not 6 <= len(sentence.split()) <= 45:
            continue
        score = len(set(lexical.content_terms(sentence)))
        if score >= 4 and (best is None or score > best[0]):
            best = (score, sentence.strip())
    return best[1] if best else None


def old_question(page: PageText) -> tuple[str, str, str] | None:
    """(question, answer, template) as the old writer wrote them, or None (its "empty" draft)."""
    sentence = _old_best_sentence(page.text)
    if sentence is None:
        return None
    match = _OLD_DEFINITION.match(sentence)
    if match:
        subject = match["subject"].strip()
        subject_words = {w.casefold() for w in subject.split()}
        if (
            subject.split()[0].casefold() not in _OLD_VAGUE | {"what", "who"}
            and not subject_words & (_OLD_CLAUSE | {"although", "while"})
            and len(subject.split()) <= 6
            and lexical.content_terms(subject)
            and len(lexical.content_terms(match["rest"])) >= 3
        ):
            full = f"{(match['article'] or '').lower()} {subject}".strip()
            return f"What {match['verb'].lower()} {full}?", sentence, "definition"
    words = re.findall(r"[^\W_][\w'’-]*", sentence)
    content = [w for w in words if w.casefold() not in lexical.STOPWORDS and len(w) > 2]
    longest = sorted(range(len(content)), key=lambda i: (-len(content[i]), i))[:3]
    phrase = ", ".join(content[i] for i in sorted(longest))
    about = f" ({page.title})" if page.title else ""
    return f"What is known about {phrase}{about}?", sentence, "known about"


class OldTemplateWriter:
    model = "template-before"
    concurrency = 1

    def write(self, page: PageText, seed: int) -> Draft:
        found = old_question(page)
        return Draft(question=found[0], answer=found[1]) if found else Draft()


# --- data ----------------------------------------------------------------------------------------------------


@dataclass
class Collection:
    name: str
    pages: list[PageText]
    questions: list[str]


def load(name: str, folder: Path, *, max_pages: int | None, max_questions: int | None) -> Collection:
    pages: list[PageText] = []
    with (folder / "corpus.jsonl").open(encoding="utf-8") as corpus:
        for line in corpus:
            row = json.loads(line)
            for number, text in enumerate(split_pages(row.get("text") or "", PAGE_CHARS), start=1):
                if len(text) >= MIN_PAGE_CHARS:
                    pages.append(PageText(len(pages), str(row["_id"]), number, row.get("title") or "", text))
    with (folder / "queries.jsonl").open(encoding="utf-8") as queries:
        questions = [json.loads(line)["text"] for line in queries]
    return Collection(name, pages[:max_pages], questions[:max_questions])


# --- the measurements ----------------------------------------------------------------------------------------


def share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "0/0"


def human_questions(collection: Collection) -> None:
    rejected = [(q, problem) for q in collection.questions if (problem := ill_formed(q)) is not None]
    accepted = len(collection.questions) - len(rejected)
    print(f"{collection.name}: human questions accepted {share(accepted, len(collection.questions))}")
    for question, problem in rejected:
        print(f"    rejected: {question!r}: {problem}")


def old_salad(collection: Collection) -> None:
    by_template: dict[str, list[str]] = {"known about": [], "definition": []}
    for page in collection.pages:
        found = old_question(page)
        if found is not None:
            by_template[found[2]].append(found[0])
    for template, questions in by_template.items():
        kept = [q for q in questions if ill_formed(q) is None]
        rejected = len(questions) - len(kept)
        print(f"{collection.name}: old '{template}' questions rejected {share(rejected, len(questions))}")
        for question in kept[:4]:
            print(f"    still accepted: {question}")


def run(
    pages: list[PageText], writer: QuestionWriter, seed: int, limits: GateLimits
) -> tuple[Outcome, list[str]]:
    accepted: list[str] = []

    def on_page(page: PageText, draft: Draft, verdict: Verdict) -> str | None:
        if verdict.accepted:
            accepted.append(draft.question)
        return verdict.reason

    outcome = generate(
        pages,
        writer,
        count=COUNT,
        seed=seed,
        duplicates=DuplicateIndex(),
        on_page=on_page,
        limits=limits,
    )
    return outcome, accepted


def _discards(discards: dict[str, int]) -> str:
    shown = {reason: n for reason, n in discards.items() if n}
    return ", ".join(f"{reason} {n}" for reason, n in shown.items()) or "none"


def generation(collection: Collection, seeds: Iterable[int]) -> None:
    writers: list[tuple[str, Callable[[], QuestionWriter], GateLimits]] = [
        ("old writer, old gate", OldTemplateWriter, GateLimits(well_formed=False)),
        ("old writer, new gate", OldTemplateWriter, GateLimits()),
        ("new writer, new gate", TemplateQuestionWriter, GateLimits()),
    ]
    budget = COUNT * PAGES_PER_QUESTION
    print(
        f"{collection.name}: count {COUNT}, up to {budget} pages per seed (accepted / discards / no clear sentence)"
    )
    asked: list[str] = []
    for seed in seeds:
        order = sample_pages(((p.key, p.document_id, p.number) for p in collection.pages), seed)
        by_key = {p.key: p for p in collection.pages}
        pages = [by_key[key] for key in order[:budget]]
        for label, make, limits in writers:
            outcome, accepted = run(pages, make(), seed, limits)
            print(
                f"  seed {seed}, {label}: {outcome.accepted} accepted of {outcome.pages_sampled} pages; "
                f"discards: {_discards(outcome.discards)}; no clear sentence: {outcome.no_clear_sentence}"
            )
            if label.startswith("new") and not asked:
                asked = accepted
    for question in asked:
        print(f"    asked: {question}")
    writer = TemplateQuestionWriter()
    drafts = [writer.write(page, 0) for page in collection.pages]
    written = [d for d in drafts if d.failure is None]
    index = DuplicateIndex()
    passed = 0
    reasons: Counter[str] = Counter()
    for page, draft in zip(collection.pages, drafts, strict=True):
        if draft.failure is not None:
            continue
        verdict = check(draft.question, draft.answer, page.text, index)
        if verdict.accepted:
            passed += 1
            index.add(draft.question)
        else:
            reasons[str(verdict.reason)] += 1
    print(
        f"{collection.name}: every page: a clear sentence on {share(len(written), len(drafts))}; "
        f"passed the gate {passed} ({', '.join(f'{r} {n}' for r, n in reasons.most_common()) or 'no discards'})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clapnq", type=Path)
    parser.add_argument("--cranfield", type=Path, default=SHARED / "cranfield")
    parser.add_argument("--seeds", default="1,2,3,4,5", help="comma-separated seeds for the generation runs")
    parser.add_argument("--quick", action="store_true", help="300 pages, 100 questions, one seed")
    args = parser.parse_args()
    if args.clapnq is None:
        args.clapnq = SHARED / "clapnq" if (SHARED / "clapnq" / "corpus.jsonl").is_file() else DEMO_CLAPNQ
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    if args.quick:
        seeds = seeds[:1]
    limit_pages, limit_questions = (300, 100) if args.quick else (None, None)
    collections = [load("clapnq", args.clapnq, max_pages=limit_pages, max_questions=limit_questions)]
    if (args.cranfield / "corpus.jsonl").is_file():
        collections.append(
            load("cranfield", args.cranfield, max_pages=limit_pages, max_questions=limit_questions)
        )
    else:
        print(f"cranfield: skipped ({args.cranfield} is not here)")

    print("## 1. Questions people wrote, through the ill_formed check")
    for collection in collections:
        human_questions(collection)
    print("\n## 2. The old template writer's questions, through the ill_formed check")
    for collection in collections:
        old_salad(collection)
    print("\n## 3. Generation, old and new offline writer")
    for collection in collections:
        generation(collection, seeds)


if __name__ == "__main__":
    main()
