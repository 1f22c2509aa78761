"""Reports: stored runs of every kind as their readers get them (the REST API, the CLI, jobs, the dashboard).
At the top of the rooms: it reads what retrieval and answers stored through runs, and judgments' calibration
beside it; no room imports it.

- `presenter`: the one presenter of a run (summary and detail) and its shapes (`shapes`);
- `diagnosis` (pure): a retrieval question's diagnosis (error, miss, partial, pass), decided when it is read; an
  answer question's, stored with it, passes through;
- `batch_jobs`: the one job skeleton of an evaluation batch, for retrieval and answers alike, whose result is the
  presenter's summary;
- `gate` (pure): the CI gate's verdict, for every output of `manage.py evaluate`;
- `report_formats` (pure): JUnit XML (its rule: only the gate fails) and markdown summaries; `run_reports`: stored
  runs as those reports and as Ragas rows.
"""
