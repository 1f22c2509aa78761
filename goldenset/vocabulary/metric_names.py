"""The names of evalsite's metrics, in the order they are shown. Plain Python: no Django import.

Retrieval (trec_eval's measures, computed by evaluation.retrieval.metrics): recall and nDCG at each cutoff k, named
"recall@k" and "ndcg@k", and MRR, "mrr"; then the measures that say how complete the judgments were and read
only what was judged: "judged@k" (the share of the top k that is judged), "ndcg_cond@k" (nDCG over the condensed
list, unjudged documents removed), "bpref" and "map_cond" (MAP over the condensed list). Answers (evaluation.answers.judge and evaluation.answers.verdicts): the five
judged metrics, each a per-question value in 0..1; the two refusal rates of a run (counts, no per-question
value); and the run's overall score (0-100). These names are keys of stored runs and of the API's JSON, so
they never change; the order here is the order of the judge's calls, the CLI's columns and the dashboard's
tables and charts.
"""

from __future__ import annotations

__all__ = [
    "ANSWER_METRICS",
    "ANSWER_SCORE",
    "BPREF",
    "INCOMPLETE_METRICS",
    "JUDGED_SHARE",
    "JUDGED_METRICS",
    "MAP_COND",
    "MRR",
    "NDCG",
    "NDCG_COND",
    "RECALL",
    "REFUSAL_METRICS",
    "RETRIEVAL_METRICS",
    "at_k",
]

RECALL, NDCG, MRR = "recall", "ndcg", "mrr"
JUDGED_SHARE, NDCG_COND, BPREF, MAP_COND = "judged", "ndcg_cond", "bpref", "map_cond"
# The measures for incomplete judgments, shown after the standard ones.
INCOMPLETE_METRICS: tuple[str, ...] = (JUDGED_SHARE, NDCG_COND, BPREF, MAP_COND)
# Display order; recall, nDCG, judged and condensed nDCG carry a cutoff ("recall@10"), the others do not.
RETRIEVAL_METRICS: tuple[str, ...] = (RECALL, NDCG, MRR, *INCOMPLETE_METRICS)

JUDGED_METRICS: tuple[str, ...] = (
    "faithfulness",
    "context_recall",
    "answer_relevancy",
    "citation_precision",
    "context_relevancy",
)
REFUSAL_METRICS: tuple[str, ...] = ("refusal_recall", "false_refusal_rate")
ANSWER_SCORE = "score"
# Display order of an answer run's metrics: the score first.
ANSWER_METRICS: tuple[str, ...] = (ANSWER_SCORE, *JUDGED_METRICS, *REFUSAL_METRICS)


def at_k(name: str, k: int) -> str:
    """A metric's name at a cutoff: at_k("ndcg", 10) -> "ndcg@10"."""
    return f"{name}@{k}"
