"""The dashboard: server-rendered pages over the tenant a signed-in user picked, each page area's views beside
the reads they render (`<area>_views.py`, `<area>_reads.py`). Views stay thin: they parse the request, call
reads here and the services of the rooms (evaluation.retrieval, answers, judgments, targets, runs; goldenset.services), and render.

- common: the current tenant (kept in the session, checked against the user's memberships on every request;
  `?tenant=cluster/tenant` switches), pagination and links every page shares; the tenancy of reads, the order
  of metrics, whole-day bounds, the cache of finished runs' results.
- golden: home, a collection's golden set, question generation and its review queue, documents.
- launch: the launchers of both evaluation kinds, and any job's progress page, poll and cancel.
- runs: the runs list, one run and its questions, downloads; answer_runs and answer_question: what the runs
  pages, Compare and the question page read of answer runs.
- compare, trends: their pages.
- study: a study's form (study_forms), its live page and poll, its cancel and preset, the studies list; its
  figures are study_charts' (no Django).
- forms (the pages' forms) and charts (the Plotly figures).

Every object is looked up within the current tenant, so another tenant's is a 404. Pages that list many runs
(runs, trends, home) read EvaluationRun rows only, never their question results.
"""
