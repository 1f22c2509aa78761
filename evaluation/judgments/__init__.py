"""Judgments by people, and how far a judge agrees with them.

- `grades` (pure): relevance grades 0-3 and what each means;
- `pooling` (pure): the documents a set of runs found that nobody judged yet, most promising first;
- `labels` (pure): human labels of answer judgements, read from a file;
- `agreement` (pure): the measures of a calibration report (kappa, alpha, balanced accuracy, thresholds);
- `label_import`: labels imported, each row matched to its entry and the run it judged;
- `calibration`: the calibration report of a collection, calibrated thresholds applied.
"""
