"""Reciprocal Rank Fusion (Cormack et al. 2009) of the sparse and dense ranked lists, optionally weighted."""

from __future__ import annotations

from collections.abc import Sequence


def reciprocal_rank_fusion(
    ranked_lists: Sequence[Sequence[int]],
    k: float = 60,
    depth: int | None = None,
    weights: Sequence[float] | None = None,
) -> list[tuple[int, float]]:
    """Fuse ranked lists of positions: score(d) = sum over lists of w_l / (k + rank_d), rank from 1.

    Only the first `depth` items of each list count (all when None). `weights` gives one w_l
    per list (None: all 1, plain RRF); a list of weight 0 is left out, as if it were off, so
    ``weights=[1, 0]`` returns the first list's order. Ties are broken by the best rank the
    item reached in any counted list, then by position, so the result is deterministic.

    >>> reciprocal_rank_fusion([[3, 1, 2], [1, 3]], k=60)
    [(1, 0.03252247488101534), (3, 0.03252247488101534), (2, 0.015873015873015872)]
    >>> reciprocal_rank_fusion([[5, 6], [7]], k=0, depth=1)
    [(5, 1.0), (7, 1.0)]
    >>> reciprocal_rank_fusion([[5, 6], [6, 7]], k=0, weights=[3, 1])
    [(5, 3.0), (6, 2.5), (7, 0.5)]
    """
    if weights is None:
        weights = [1.0] * len(ranked_lists)
    elif len(weights) != len(ranked_lists):
        raise ValueError(f"{len(weights)} weights for {len(ranked_lists)} ranked lists")
    score: dict[int, float] = {}
    best: dict[int, int] = {}
    for ranked, weight in zip(ranked_lists, weights):
        if weight == 0:
            continue
        seen = set()
        for rank, pos in enumerate(ranked[:depth] if depth is not None else ranked, start=1):
            if pos in seen:  # a list names each item once; a repeat would count twice
                continue
            seen.add(pos)
            score[pos] = score.get(pos, 0.0) + weight / (k + rank)
            best[pos] = min(best.get(pos, rank), rank)
    return sorted(score.items(), key=lambda item: (-item[1], best[item[0]], item[0]))
