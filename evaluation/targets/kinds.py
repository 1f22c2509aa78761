"""The kinds of target, owned here and stored as Target.kind (evaluation.models.TargetKind is built from these).
Plain Python: no Django import."""

from __future__ import annotations

LMKIT, ELASTICSEARCH, HTTP, RAG_HTTP, PYTHON = "lmkit", "elasticsearch", "http", "rag-http", "python"
KINDS = (LMKIT, ELASTICSEARCH, HTTP, RAG_HTTP, PYTHON)
RETRIEVAL_KINDS = (LMKIT, ELASTICSEARCH, HTTP, PYTHON)
ANSWER_KINDS = (RAG_HTTP, PYTHON)  # a python callable may answer too (TargetClient.answer)
