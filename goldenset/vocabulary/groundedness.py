"""The groundedness levels of grounded answering. Plain Python: no Django import.

How readily the answer pipeline declines, loosest first: "Off" always answers; "Low", "Medium" and "High"
decline ever more readily when the passages do not support an answer. PascalCase, as the API's enum values.
The order matters: the ClapNQ benchmark checks the ladder from each level to the next stricter one.

What each level does (the extractive answer's support thresholds, the chat model's rules) stays with the
answer writer, evaluation.answers.writer; the request reader (evaluation.configs), the dashboard form and the API
help texts take the names from here.
"""

from __future__ import annotations

__all__ = ["GROUNDEDNESS_LEVELS"]

GROUNDEDNESS_LEVELS: tuple[str, ...] = ("Off", "Low", "Medium", "High")
