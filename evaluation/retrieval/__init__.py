"""Retrieval: finding a question's documents and scoring how well they were found.

- `search/`: the search engine (pure): postings, BM25 kernels, fusion, rerankers, embedders;
- `indexes`, `index_files`, `corpus`, `index_store`, `embedding_store`: an index per collection version, built
  once from the collection's pages (`corpus`), saved and mapped from disk (`index_files`), kept in memory
  (`indexes`), published for other machines (`index_store`); page embeddings stored once;
- `read_path`: the one read path search and evaluation share (POST /search);
- `metrics` (pure): recall@k, MRR, nDCG@k and the rest, equal to trec_eval's;
- `similarity` (pure): how alike two rankings are without judgments (overlap@k, Jaccard@k, rank-biased overlap);
- `run_files` (pure): run files an offline pipeline wrote;
- `evaluate`: retrieval evaluation of configurations, targets and run files, and its Evaluate job.
"""
