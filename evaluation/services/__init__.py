"""Evaluation's services (writes and the work behind the API, the dashboard, the CLI and the jobs).

- `search`: the one read path search and evaluation share (one or several collections, a configuration,
  rerankers) and POST /search.
- `retrieval`: retrieval evaluation (recall@k, MRR, nDCG@k as trec_eval scores them) and its Evaluate job.
- `answers`: grounded answers (POST /search/answer) and answer evaluation (writer, judge, verdicts) and its
  EvaluateAnswers job.
- `runs`: storing a run of either kind with its question results, and its summary.

Reads are in evaluation.selectors; the pure parts (metrics, the search engine, the answer writer, the judge,
the verdicts) are plain modules beside this package.
"""
