# Evaluation runs and per-question results arrive with retrieval evaluation (issue 3).
