"""Runs: every evaluation stored, read back, compared and reported.

- `batch_jobs`: the one job skeleton of an evaluation batch, for retrieval and answers alike;
- `presenter`: the one presenter of a run (summary and detail) and its shapes (`shapes`);
- `store`: a run of either kind stored with its question results, and the summary of it;
- `selectors`: reads of runs, always scoped to one tenant, and the golden questions an evaluation asks;
- `stats` (pure): bootstrap intervals and the paired randomization test over questions;
- `slices` (pure): subsets and slices of a golden set;
- `gate` (pure): the CI gate's verdict, for every output of `manage.py evaluate`;
- `report_formats` (pure): JUnit XML (its rule: only the gate fails) and markdown summaries; `reports`: stored runs as those reports and
  as Ragas rows.
"""
