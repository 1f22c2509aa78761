"""Whether runs were judged evenly enough to be compared on the standard measures. Plain Python: no Django.

The standard measures (recall, nDCG, MRR) count a document nobody judged as non-relevant. Two runs whose top k
hold different shares of judged documents (``judged@k``) are then compared on unequal terms: the run that finds
what nobody looked at loses for it. When the shares differ by ``JUDGED_GAP`` or more, the comparison says so,
names the measure to read beside nDCG@k, nDCG@k over condensed lists (only judged documents ranked), and says
whether the two order the most and the least judged runs the same way. Condensed nDCG is a cross-check, not a
cure: in benchmarks/pooling_bench.py's leave-one-out test (a system scored under judgments pooled from the others
only) it moves the left-out system about as little as nDCG@10 does (0.31 and 0.38 places on Cranfield, 0.23
and 0.15 on Vaswani), while bpref moves it more (0.77, 0.54), so bpref is not offered. The remedy is to judge
what the runs found (a pool).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from goldenset.vocabulary.metric_names import JUDGED_SHARE, NDCG, NDCG_COND, at_k

__all__ = ["JUDGED_GAP", "JudgedGap", "judged_gap"]

# Ten points of judged@k between two runs: one run in ten places of its top k stands on documents the other's
# score never read. Below it, the standard measures still rank runs much as the condensed ones do
# (benchmarks/pooling_bench.py shows how far they part as judgments are hidden).
JUDGED_GAP = 0.10


@dataclass(frozen=True)
class JudgedGap:
    metric: str  # the judged@k compared, at the largest k every run has
    shares: dict[str, float]  # run name -> its judged@k
    gap: float  # the largest share minus the smallest
    read_instead: str | None  # condensed nDCG at that k, when every run carries it
    # Whether nDCG@k and condensed nDCG@k order the most and the least judged runs the same way (None: a run
    # lacks one of them, or one measure ties them).
    agrees: bool | None

    @property
    def most(self) -> str:
        return max(self.shares, key=lambda name: self.shares[name])

    @property
    def least(self) -> str:
        return min(self.shares, key=lambda name: self.shares[name])


def judged_gap(means: Mapping[str, Mapping[str, float]], threshold: float = JUDGED_GAP) -> JudgedGap | None:
    """The runs' judged@k at the largest k they all carry, when the shares differ by `threshold` or more; None
    when they are close, or when fewer than two runs carry a judged@k (runs stored before it was measured)."""
    if len(means) < 2:
        return None
    prefix = f"{JUDGED_SHARE}@"
    common = set.intersection(*({m for m in values if m.startswith(prefix)} for values in means.values()))
    if not common:
        return None
    k = max(int(name.removeprefix(prefix)) for name in common)
    metric = at_k(JUDGED_SHARE, k)
    shares = {name: values[metric] for name, values in means.items()}
    spread = max(shares.values()) - min(shares.values())
    if spread < threshold - 1e-12:  # 0.9 - 0.8 is 0.0999...: a gap printed as 0.10 is one
        return None
    everywhere = set.intersection(*(set(values) for values in means.values()))
    standard, condensed = at_k(NDCG, k), at_k(NDCG_COND, k)
    gap = JudgedGap(metric, shares, spread, condensed if condensed in everywhere else None, None)
    if standard in everywhere and condensed in everywhere:
        one = means[gap.most][standard] - means[gap.least][standard]
        other = means[gap.most][condensed] - means[gap.least][condensed]
        if one != 0 and other != 0:
            return replace(gap, agrees=(one > 0) == (other > 0))
    return gap
