"""evaluation.retrieval.metrics: hand-computed cases, then parity with pytrec_eval (trec_eval) on real collections.

Pure Python and numpy: no database. pytrec_eval is the oracle, as docs/evaluation.md ("Metrics follow trec_eval exactly") promises.

What trec_eval does with awkward queries (checked against pytrec_eval in test_trec_eval_query_selection):
- a query with no qrels line at all is ignored (not evaluated, not in the mean);
- a query judged but with no relevant document (every grade <= 0) is evaluated: 0 on recall, nDCG and
  recip_rank, and it counts in trec_eval's mean. evalsite leaves such queries out of its means, so the parity
  test compares per-query values for every query and means over the queries with a relevant document;
- a query with no retrieved document is ignored by trec_eval (unless -c); pytrec_eval evaluates an empty run
  for it, with zeros, which is also what these functions give.
"""

from __future__ import annotations

import csv
import json
import math
import random
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from evaluation.retrieval import metrics
from evaluation.retrieval.metrics import (
    evaluate_query,
    first_relevant_rank,
    mean_metrics,
    missing_relevant,
    ndcg_at,
    rank_run,
    recall_at,
    reciprocal_rank,
    reciprocal_rank_at,
)
from evaluation.retrieval.search.bm25 import BM25Params, build_index
from goldenset.text import tokenize

TOLERANCE = 1e-9
KS = (1, 5, 10, 100)
DEPTH = max(KS)
TREC_MEASURES = {"recall.1,5,10,100", "ndcg_cut.1,5,10,100", "recip_rank"}
# Our key -> pytrec_eval's key.
ORACLE_KEY = {
    **{f"recall@{k}": f"recall_{k}" for k in KS},
    **{f"ndcg@{k}": f"ndcg_cut_{k}" for k in KS},
    "mrr": "recip_rank",
}


def trec_eval(ranking: list[str], qrels: dict[str, int]) -> dict[str, float]:
    """pytrec_eval's measures for one ranking (given distinct descending scores, so its order is ours)."""
    run = {doc: float(len(ranking) - i) for i, doc in enumerate(ranking)}
    return pytrec_eval.RelevanceEvaluator({"q": qrels}, TREC_MEASURES).evaluate({"q": run})["q"]


def assert_matches_trec_eval(ranking: list[str], qrels: dict[str, int]) -> None:
    ours = evaluate_query(ranking, qrels, KS)
    theirs = trec_eval(ranking, qrels)
    for key, oracle_key in ORACLE_KEY.items():
        assert ours[key] == pytest.approx(theirs[oracle_key], abs=TOLERANCE), key


def trec_eval_recip_rank(run: dict[str, float], relevant: str) -> float:
    return pytrec_eval.RelevanceEvaluator({"q": {relevant: 1}}, {"recip_rank"}).evaluate({"q": run})["q"][
        "recip_rank"
    ]


# ---------------------------------------------------------------- rank_run


def test_rank_run_orders_by_score_then_by_id_descending():
    assert rank_run({"a": 1.0, "b": 2.0, "c": 2.0, "d": 0.5}) == ["c", "b", "a", "d"]
    assert rank_run({}) == []


def test_rank_run_compares_ids_as_strings_so_9_beats_10_on_a_tie():
    assert rank_run({"10": 1.0, "9": 1.0}) == ["9", "10"]
    assert rank_run({"9": 1.0, "10": 2.0}) == ["10", "9"]
    # trec_eval agrees: with "10" relevant and tied with "9", "10" is at rank 2.
    assert trec_eval_recip_rank({"9": 1.0, "10": 1.0}, relevant="10") == 0.5
    assert trec_eval_recip_rank({"9": 1.0, "10": 1.0}, relevant="9") == 1.0


def test_rank_run_compares_scores_as_trec_eval_holds_them_32_bit_floats():
    # 1 + 1e-12 and 1.0 are one float32: trec_eval sees a tie and breaks it by id ("b" first).
    scores = {"a": 1.0 + 1e-12, "b": 1.0}
    assert rank_run(scores) == ["b", "a"]
    assert trec_eval_recip_rank(scores, relevant="a") == 0.5
    # At the engine's precision "a" scores higher.
    assert rank_run(scores, trec_float=False) == ["a", "b"]
    # Beyond float32's range a score is +inf, as a C cast makes it, and still ranks first.
    assert rank_run({"a": 1e300, "b": 1.0, "c": -1e300}) == ["a", "b", "c"]


def test_rank_run_breaks_ties_between_non_ascii_ids_in_utf8_byte_order_as_trec_eval():
    ids = ["Z", "z", "é", "ÿ", "Ā", "中", "\uffff", "𝄞", "a𝄞", "ab"]
    run = dict.fromkeys(ids, 1.0)
    ranking = rank_run(run)
    assert ranking == sorted(ids, key=lambda doc: doc.encode("utf-8"), reverse=True)
    for rank, doc in enumerate(ranking, start=1):
        assert trec_eval_recip_rank(run, relevant=doc) == 1.0 / rank, doc


def test_rank_run_refuses_nan():
    with pytest.raises(ValueError, match="NaN"):
        rank_run({"a": float("nan"), "b": 1.0})


# ---------------------------------------------------------------- measures, by hand

RANKING = ["d1", "d2", "d3", "d4"]
QRELS = {
    "d2": 1,
    "d4": 2,
    "d9": 1,
    "d3": 0,
}  # relevant: d2, d4, d9 (d9 never retrieved); d3 judged non-relevant


def test_recall_counts_all_judged_relevant_documents_in_the_denominator():
    assert recall_at(RANKING, QRELS, 1) == 0.0
    assert recall_at(RANKING, QRELS, 2) == 1 / 3
    assert recall_at(RANKING, QRELS, 4) == 2 / 3
    assert recall_at(RANKING, QRELS, 10) == 2 / 3  # k beyond the ranking: the rest counts as non-relevant
    assert_matches_trec_eval(RANKING, QRELS)


def test_measures_are_zero_when_the_query_has_no_relevant_document():
    for qrels in ({"d1": 0, "d2": 0}, {}):
        assert recall_at(RANKING, qrels, 10) == 0.0
        assert ndcg_at(RANKING, qrels, 10) == 0.0
        assert reciprocal_rank(RANKING, qrels) == 0.0
        assert first_relevant_rank(RANKING, qrels) is None
        assert missing_relevant(RANKING, qrels) == []
    assert_matches_trec_eval(RANKING, {"d1": 0, "d2": 0})


def test_reciprocal_rank_is_one_over_the_rank_of_the_first_relevant_document():
    qrels = {"d3": 1, "d2": 0}
    assert first_relevant_rank(RANKING, qrels) == 3
    assert reciprocal_rank(RANKING, qrels) == 1 / 3
    assert reciprocal_rank_at(RANKING, qrels, 3) == 1 / 3
    assert reciprocal_rank_at(RANKING, qrels, 2) == 0.0  # cut before it
    assert reciprocal_rank(RANKING, {"x": 1}) == 0.0
    assert reciprocal_rank([], {"x": 1}) == 0.0
    assert_matches_trec_eval(RANKING, qrels)


def test_ndcg_uses_grades_as_gains_and_the_ideal_from_every_judged_relevant_document():
    ranking = ["a", "b", "c"]
    qrels = {"a": 1, "b": 0, "c": 3, "x": 2}  # x is relevant but not retrieved: it still shapes the ideal
    dcg = 1 / math.log2(2) + 3 / math.log2(4)  # = 2.5
    ideal = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)  # grades 3, 2, 1
    assert ndcg_at(ranking, qrels, 3) == pytest.approx(dcg / ideal, abs=1e-15)
    assert ndcg_at(ranking, qrels, 3) == pytest.approx(2.5 / 4.761859507142915, abs=1e-15)
    assert ndcg_at(ranking, qrels, 1) == 1 / 3  # dcg 1, ideal cut at 1: grade 3
    assert ndcg_at(ranking, qrels, 2) == pytest.approx(1 / (3 + 2 / math.log2(3)), abs=1e-15)
    assert ndcg_at(ranking, qrels, 10) == ndcg_at(ranking, qrels, 3)  # k beyond the ranking and the ideal
    assert ndcg_at(["c", "x", "a"], qrels, 3) == 1.0
    assert_matches_trec_eval(ranking, qrels)
    assert_matches_trec_eval(["c", "x", "a"], qrels)


def test_unjudged_and_negative_grades_are_neither_relevant_nor_gains():
    ranking = ["u", "n", "r"]  # u unjudged, n graded -1 (trec_eval: in the pool but unjudged)
    qrels = {"n": -1, "r": 1}
    assert ndcg_at(ranking, qrels, 3) == 1 / math.log2(4)
    assert recall_at(ranking, qrels, 3) == 1.0
    assert reciprocal_rank(ranking, qrels) == 1 / 3
    assert missing_relevant(ranking, qrels) == []
    assert_matches_trec_eval(ranking, qrels)


def test_missing_relevant_lists_expected_documents_not_retrieved_sorted():
    assert missing_relevant(["a", "b"], {"c": 1, "a": 2, "b": 0, "e": 1, "d": 0, "10": 1}) == ["10", "c", "e"]


def test_cutoffs_must_be_positive_and_rankings_free_of_duplicates():
    with pytest.raises(ValueError, match="positive"):
        recall_at(RANKING, QRELS, 0)
    with pytest.raises(ValueError, match="more than once"):
        ndcg_at(["d2", "d2"], QRELS, 10)
    with pytest.raises(ValueError, match="cutoff"):
        evaluate_query(RANKING, QRELS, [])


def test_evaluate_query_keys_and_search_depth():
    metrics = evaluate_query(RANKING, QRELS, (1, 10))
    assert list(metrics) == ["recall@1", "recall@10", "ndcg@1", "ndcg@10", "mrr"] + [
        "judged@1", "judged@10", "ndcg_cond@1", "ndcg_cond@10", "bpref", "map_cond",
    ]  # fmt: skip
    assert metrics["judged@1"] == 0.0 and metrics["judged@10"] == 3 / 10  # d2, d3, d4 judged; d1 not
    assert metrics["recall@10"] == 2 / 3
    assert metrics["ndcg@1"] == 0.0
    assert metrics["mrr"] == 1 / 2
    # mrr looks no deeper than max(ks): a first relevant document at rank 11 does not count at depth 10.
    ranking = [f"n{i}" for i in range(10)] + ["d2"]
    assert evaluate_query(ranking, QRELS, (5, 10))["mrr"] == 0.0
    assert evaluate_query(ranking, QRELS, (5, 11))["mrr"] == 1 / 11


def test_mean_metrics_is_the_arithmetic_mean_in_key_order():
    assert mean_metrics([{"b": 1.0, "a": 0.0}, {"b": 0.0, "a": 0.5}]) == {"b": 0.5, "a": 0.25}
    assert list(mean_metrics([{"b": 1.0, "a": 0.0}])) == ["b", "a"]
    assert mean_metrics([]) == {}
    with pytest.raises(ValueError, match="different metrics"):
        mean_metrics([{"a": 1.0}, {"b": 1.0}])


def test_trec_eval_query_selection():
    """What pytrec_eval does with queries that are unjudged, judged without a relevant document, or unretrieved."""
    qrels = {"judged_none_relevant": {"a": 0}, "normal": {"a": 1}, "not_retrieved": {"a": 1}}
    run = {
        "judged_none_relevant": {"a": 1.0},
        "normal": {"a": 1.0},
        "no_qrels": {"a": 1.0},
        "not_retrieved": {},
    }
    result = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES).evaluate(run)
    assert "no_qrels" not in result  # no relevance information: ignored
    assert set(result["judged_none_relevant"].values()) == {0.0}  # evaluated, all zeros
    assert set(result["not_retrieved"].values()) == {0.0}  # pytrec_eval evaluates an empty run as zeros
    assert set(result["normal"].values()) == {1.0}
    judged_none = evaluate_query(["a"], qrels["judged_none_relevant"], KS)
    assert {judged_none[key] for key in ORACLE_KEY} == {0.0}
    assert judged_none["judged@1"] == 1.0  # "a" is judged, non-relevant
    assert set(evaluate_query([], qrels["not_retrieved"], KS).values()) == {0.0}


# ---------------------------------------------------------------- parity with pytrec_eval on real collections

DATASETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"
COLLECTIONS = ("cranfield", "vaswani_npl", "clapnq")


def _read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@cache
def _collection(name: str):
    folder = DATASETS / name
    if not folder.is_dir():
        pytest.skip(f"collection {name!r} not found at {folder}")
    corpus = _read_jsonl(folder / "corpus.jsonl")
    ids = [doc["_id"] for doc in corpus]
    # Title and text, as the reference figures index them (Cranfield's text repeats its title).
    tokens = [tokenize(f"{doc.get('title') or ''} {doc['text']}") for doc in corpus]
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels.tsv").open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        next(reader)  # header
        for query_id, doc_id, grade in reader:
            qrels.setdefault(query_id, {})[doc_id] = int(grade)
    queries = {
        query["_id"]: query["text"]
        for query in _read_jsonl(folder / "queries.jsonl")
        if query.get("answerable", True)  # clapnq: only answerable queries have relevant passages
    }
    assert set(qrels) <= set(queries), "every judged query has a text"
    return ids, tokens, queries, qrels


@pytest.mark.skipif(not DATASETS.is_dir(), reason=f"the real collections are not at {DATASETS}")
@pytest.mark.parametrize("variant", ["lucene", "okapi"])
@pytest.mark.parametrize("name", COLLECTIONS)
def test_every_query_matches_pytrec_eval_on_full_bm25_runs(name, variant):
    ids, tokens, queries, qrels = _collection(name)
    index = build_index(tokens, BM25Params(variant=variant))
    rankings: dict[str, list[str]] = {}
    run: dict[str, dict[str, float]] = {}
    ties = 0
    for query_id in qrels:
        scores = index.scores(tokenize(queries[query_id]))
        hits = {ids[i]: float(scores[i]) for i in np.flatnonzero(scores > 0)}
        ranking = rank_run(hits)[:DEPTH]
        rankings[query_id] = ranking
        # The run pytrec_eval gets: the same top documents with their float64 scores; it re-ranks them itself.
        run[query_id] = {doc: hits[doc] for doc in ranking}
        top = np.array(list(run[query_id].values()), dtype=np.float32)
        ties += len(top) - len(np.unique(top))
    # Tied scores (as trec_eval's 32-bit floats) occur in every collection, so the id tie-break is exercised.
    assert ties > 0

    oracle = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES).evaluate(run)
    cut_at_10 = {query_id: {doc: run[query_id][doc] for doc in rankings[query_id][:10]} for query_id in run}
    oracle_mrr_10 = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut_at_10)
    # Every judged query has a run (possibly empty), so pytrec_eval returns them all.
    assert set(oracle) == set(qrels) == set(oracle_mrr_10)

    ours: dict[str, dict[str, float]] = {}
    mismatches = []
    for query_id, ranking in rankings.items():
        ours[query_id] = evaluate_query(ranking, qrels[query_id], KS)
        ours[query_id]["mrr@10"] = reciprocal_rank_at(ranking, qrels[query_id], 10)
        expected = {key: oracle[query_id][oracle_key] for key, oracle_key in ORACLE_KEY.items()}
        expected["mrr@10"] = oracle_mrr_10[query_id]["recip_rank"]
        for key, value in expected.items():
            if abs(ours[query_id][key] - value) > TOLERANCE:
                mismatches.append((query_id, key, ours[query_id][key], value))
    assert not mismatches, f"{len(mismatches)} differences from pytrec_eval, first: {mismatches[:5]}"

    # Means over the queries with a relevant document (evalsite's selection; here it is every judged query).
    scored = [query_id for query_id in qrels if any(grade > 0 for grade in qrels[query_id].values())]
    means = mean_metrics([ours[query_id] for query_id in scored])
    expected_means = {
        key: pytrec_eval.compute_aggregated_measure(
            oracle_key, [oracle[query_id][oracle_key] for query_id in scored]
        )
        for key, oracle_key in ORACLE_KEY.items()
    }
    expected_means["mrr@10"] = pytrec_eval.compute_aggregated_measure(
        "recip_rank", [oracle_mrr_10[query_id]["recip_rank"] for query_id in scored]
    )
    for key, expected_mean in expected_means.items():
        assert abs(means[key] - expected_mean) <= TOLERANCE, key


def test_evaluate_query_equals_the_per_measure_functions_bit_for_bit():
    """The one-pass evaluate_query gives exactly what the per-measure functions give, float for float."""
    import random

    rng = random.Random(7)
    for _ in range(300):
        docs = [str(i) for i in rng.sample(range(60), 40)]
        qrels = {str(d): rng.choice([0, 1, 1, 2, 3]) for d in rng.sample(range(60), 15)}
        ks = sorted(rng.sample(range(1, 45), 3))
        got = metrics.evaluate_query(docs, qrels, ks)
        want = {f"recall@{k}": metrics.recall_at(docs, qrels, k) for k in ks}
        want |= {f"ndcg@{k}": metrics.ndcg_at(docs, qrels, k) for k in ks}
        want["mrr"] = metrics.reciprocal_rank_at(docs, qrels, max(ks))
        top = docs[: max(ks)]
        want |= {f"judged@{k}": metrics.judged_at(top, qrels, k) for k in ks}
        want |= {f"ndcg_cond@{k}": metrics.ndcg_at(metrics.condensed(top, qrels), qrels, k) for k in ks}
        want["bpref"] = metrics.bpref(top, qrels)
        want["map_cond"] = metrics.average_precision(metrics.condensed(top, qrels), qrels)
        assert got == want and list(got) == list(want)


# ---------------------------------------------------------------- measures for incomplete judgments

# pytrec_eval's names of the measures for incomplete judgments at these cutoffs.
HOLES_KS = (1, 5, 10)
HOLES_MEASURES = {"bpref", "map", "ndcg_cut.1,5,10"}


def incomplete_oracle(rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, dict]:
    """pytrec_eval's bpref and map, its nDCG@k and map over condensed lists (judged_docs_only_flag, trec_eval
    -J), and Judged@k as P.k with every judged document made relevant (grades >= 0 raised by one)."""
    run = {q: {doc: float(len(r) - i) for i, doc in enumerate(r)} for q, r in rankings.items()}
    full = pytrec_eval.RelevanceEvaluator(qrels, HOLES_MEASURES).evaluate(run)
    cond = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg_cut.1,5,10"}, judged_docs_only_flag=True)
    condensed_values = cond.evaluate(run)
    judged_qrels = {q: {d: g + 1 if g >= 0 else g for d, g in grades.items()} for q, grades in qrels.items()}
    judged = pytrec_eval.RelevanceEvaluator(judged_qrels, {"P.1,5,10"}).evaluate(run)
    oracle = {}
    for q in full:
        oracle[q] = {"bpref": full[q]["bpref"], "map": full[q]["map"], "map_cond": condensed_values[q]["map"]}
        for k in HOLES_KS:
            oracle[q][f"ndcg_cond@{k}"] = condensed_values[q][f"ndcg_cut_{k}"]
            oracle[q][f"judged@{k}"] = judged[q][f"P_{k}"]
    return oracle


def ours_incomplete(ranking: list[str], qrels: dict[str, int]) -> dict[str, float]:
    judged_only = metrics.condensed(ranking, qrels)
    values = {
        "bpref": metrics.bpref(ranking, qrels),
        "map": metrics.average_precision(ranking, qrels),
        "map_cond": metrics.average_precision(judged_only, qrels),
    }
    for k in HOLES_KS:
        values[f"ndcg_cond@{k}"] = ndcg_at(judged_only, qrels, k)
        values[f"judged@{k}"] = metrics.judged_at(ranking, qrels, k)
    return values


def incomplete_mismatches(rankings, qrels, oracle) -> list[tuple]:
    """(query, measure, ours, pytrec_eval's) wherever the two differ by more than TOLERANCE: the per-measure
    functions, and evaluate_query (what every run stores) at the search depth of the rankings given."""
    mismatches = []
    for q in oracle:
        ours = ours_incomplete(rankings[q], qrels[q])
        stored = evaluate_query(rankings[q], qrels[q], (*HOLES_KS, max(DEPTH, len(rankings[q]))))
        ours |= {key: stored[key.removeprefix("stored ")] for key in STORED}
        for key, value in ours.items():
            expected = oracle[q][key.removeprefix("stored ")]
            if abs(value - expected) > TOLERANCE:
                mismatches.append((q, key, value, expected))
    return mismatches


# The measures a run stores that pytrec_eval has (map itself is not stored: map_cond is).
STORED = (
    "stored bpref",
    "stored map_cond",
    *(f"stored {m}@{k}" for m in ("judged", "ndcg_cond") for k in HOLES_KS),
)


def test_bpref_map_and_judged_by_hand():
    # RANKING d1 d2 d3 d4; relevant d2, d4, d9 (R = 3), d3 judged non-relevant (N = 1), d1 unjudged.
    assert metrics.bpref(RANKING, QRELS) == 1 / 3  # d2: nothing judged above, 1; d4: d3 above, 1 - 1/1 = 0
    assert metrics.average_precision(RANKING, QRELS) == (1 / 2 + 2 / 4) / 3
    assert metrics.judged_at(RANKING, QRELS, 1) == 0.0 and metrics.judged_at(RANKING, QRELS, 4) == 3 / 4
    assert metrics.judged_at(RANKING, QRELS, 8) == 3 / 8  # places past the ranking count as unjudged
    assert metrics.condensed(RANKING, QRELS) == ["d2", "d3", "d4"]
    # Over the condensed list the unjudged d1 no longer pushes d2 down.
    assert metrics.average_precision(metrics.condensed(RANKING, QRELS), QRELS) == (1 / 1 + 2 / 3) / 3
    # An unjudged document above a relevant one costs bpref nothing; a judged non-relevant one does.
    assert metrics.bpref(["u", "r"], {"r": 1, "n": 0}) == 1.0
    assert metrics.bpref(["n", "r"], {"r": 1, "n": 0}) == 0.0
    assert metrics.bpref(["r"], {"r": 1}) == 1.0  # no judged non-relevant document at all
    assert metrics.bpref(["a"], {"a": 0}) == 0.0 and metrics.average_precision(["a"], {}) == 0.0
    with pytest.raises(ValueError, match="more than once"):
        metrics.bpref(["r", "r"], {"r": 1})
    for q, values in incomplete_oracle({"q": RANKING}, {"q": QRELS}).items():
        assert ours_incomplete(RANKING, QRELS) == pytest.approx(values, abs=TOLERANCE), q


def test_incomplete_judgment_measures_equal_pytrec_eval_on_random_runs():
    rng = random.Random(11)
    rankings, qrels = {}, {}
    for q in range(400):
        pool = [f"d{i}" for i in range(40)]
        rankings[str(q)] = rng.sample(pool, rng.randint(0, 25))
        judged = rng.sample(pool, rng.randint(1, 20))
        qrels[str(q)] = {doc: rng.choice([-1, 0, 0, 0, 1, 2, 3]) for doc in judged}
    oracle = incomplete_oracle(rankings, qrels)
    assert set(oracle) == set(qrels)
    mismatches = incomplete_mismatches(rankings, qrels, oracle)
    assert not mismatches, f"{len(mismatches)} differences from pytrec_eval, first: {mismatches[:5]}"
    # The oracle's judged-only option is in force: condensing changes map for many queries.
    assert sum(oracle[q]["map_cond"] != oracle[q]["map"] for q in oracle) > 100


@pytest.mark.skipif(not DATASETS.is_dir(), reason=f"the real collections are not at {DATASETS}")
@pytest.mark.parametrize("name", ["cranfield", "vaswani_npl"])
def test_incomplete_judgment_measures_equal_pytrec_eval_with_70_percent_of_the_judgments_hidden(name):
    ids, tokens, queries, full_qrels = _collection(name)
    index = build_index(tokens, BM25Params(variant="lucene"))
    rng = np.random.default_rng(5)
    qrels = {}
    for query_id, grades in full_qrels.items():
        kept = {doc: grade for doc, grade in grades.items() if rng.random() >= 0.7}
        if kept:  # a query left with no judgment at all is one trec_eval ignores
            qrels[query_id] = kept
    rankings = {}
    for query_id in qrels:
        scores = index.scores(tokenize(queries[query_id]))
        hits = {ids[i]: float(scores[i]) for i in np.flatnonzero(scores > 0)}
        rankings[query_id] = rank_run(hits)[:DEPTH]
    oracle = incomplete_oracle(rankings, qrels)
    mismatches = incomplete_mismatches(rankings, qrels, oracle)
    assert not mismatches, f"{len(mismatches)} differences from pytrec_eval, first: {mismatches[:5]}"
    # The holes are real: most top-10s hold documents the remaining judgments do not grade.
    assert sum(ours_incomplete(rankings[q], qrels[q])["judged@10"] < 1.0 for q in qrels) > len(qrels) / 2
