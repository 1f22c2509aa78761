"""Judgments by people (relevance grades of documents, labels of answer judgements), and how far a judge
agrees with them.

- `assessors` (pure): a chat model as a relevance assessor: its versioned prompt, its answer read, samples combined;
- `grades` (pure): relevance grades 0-3 and what each means;
- `highlight` (pure): the question's words marked in a document, for a rater;
- `pooling` (pure): the documents a set of runs found that nobody judged yet, most promising first;
- `pools`: pools made from stored runs, the next item for a rater, relevance judgments stored;
- `labels` (pure): human labels of answer judgements, read from a file;
- `agreement` (pure): the measures of a calibration report (kappa, alpha, balanced accuracy, thresholds);
- `label_import`: labels imported, each row matched to its entry and the run it judged;
- `calibration`: the calibration report of a collection, calibrated thresholds applied.
"""
