"""Answers: grounded answers written from retrieved passages, and their judgement.

- `configs` (pure): an answer configuration and the answer metrics' thresholds, read from a request;
- `writer` (pure): from a question and its passages to an answer with citations;
- `judge` (pure): the five answer metrics, their heuristic judge and the honesty rules; `judge_support` (pure)
  how well passages support a statement; `judge_llm` (pure) the chat-model judge; `judge_votes` (pure) k
  sampled judgements made one; `judge_weights` term rarity in a collection;
- `verdicts` (pure): pass or fail and the diagnosis of each question, and a run's answer summary;
- `evaluate`: POST /search/answer and answer evaluation, and its EvaluateAnswers job.
"""
