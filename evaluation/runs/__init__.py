"""Runs: every evaluation stored and read back, below the rooms that write runs (retrieval, answers) and the
one that reports them (reports).

- `store`: a run of either kind stored with its question results, and the summary of it;
- `selectors`: reads of runs, always scoped to one tenant, the golden questions an evaluation asks, and the
  machine assessors whose grades are written into them;
- `stats` (pure): bootstrap intervals and the paired randomization test over questions;
- `slices` (pure): subsets and slices of a golden set.
"""
