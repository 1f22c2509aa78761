"""The query workbench: one question at a time, as a search engineer tunes (Quepid's case, SRW's side by side).

Owns: one question's ranked results under up to three configurations side by side, each document with its
grade and its rank in the other columns, the question's metrics per configuration, explain on request
(`question.py`); the golden questions listed with their scores under a stored run or a configuration, worst
first (`questions.py`); grading where one looks, into the judgment store pools use, and a new query added to the
golden set with what was just judged (`grading.py`). It stands over retrieval, targets and judgments."""
