"""History windowing (paper Section 3.2) with the paper's defaults w=2, L=8, s=7."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazymem.errors import ConfigError
from lazymem.records import History, Message
from lazymem.retrieve import (
    Window,
    WindowConfig,
    build_windows,
    merge_spans,
    session_starts,
    split_span,
    window_stats,
)


def make_history(session_lengths, hid="h"):
    """A history whose sessions s0, s1, ... have the given numbers of messages."""
    msgs, pos = [], 0
    for si, length in enumerate(session_lengths):
        for turn in range(length):
            msgs.append(Message(pos, f"s{si}#{turn}", f"s{si}", turn, "user", f"m{pos}", ""))
            pos += 1
    return History(hid, tuple(msgs))


# --- config -----------------------------------------------------------------------


def test_config_defaults_are_the_papers():
    c = WindowConfig()
    assert (c.w, c.L, c.s, c.cross_sessions) == (2, 8, 7, True)
    assert all(f.metadata.get("help") for f in dataclasses.fields(WindowConfig))


@pytest.mark.parametrize(
    "kwargs, name",
    [({"w": -1}, "w"), ({"L": 0}, "L"), ({"s": 0}, "s"), ({"s": 9}, "s"), ({"w": 1.5}, "w"), ({"L": True}, "L")],
)
def test_config_rejects_bad_values_naming_the_field(kwargs, name):
    with pytest.raises(ConfigError, match=rf"WindowConfig\.{name}\b"):
        WindowConfig(**kwargs)


# --- hand-worked examples -----------------------------------------------------------


def test_paper_defaults_example():
    # 10 and 13 are 3 <= 2w = 4 apart: one window [8, 15]; 30 alone: [28, 32].
    assert merge_spans([10, 13, 30], 100, 2) == [(8, 15), (28, 32)]
    ws = build_windows(100, [10, 13, 30])
    assert [(w.start, w.end, w.merged_id, w.sub_id) for w in ws] == [(8, 15, 0, 0), (28, 32, 1, 0)]
    assert ws[0].hits == (10, 13) and ws[1].hits == (30,)
    assert len(ws[0]) == 8 and ws[0].positions == tuple(range(8, 16))


def test_twenty_message_span_splits_in_three():
    s = 40
    assert split_span(s, s + 19, 8, 7) == [(s, s + 7), (s + 7, s + 14), (s + 14, s + 19)]


def test_split_edge_lengths():
    assert split_span(0, 7, 8, 7) == [(0, 7)]  # exactly L: whole
    assert split_span(0, 8, 8, 7) == [(0, 7), (7, 8)]  # L + 1: a 2-message tail
    assert split_span(0, 14, 8, 7) == [(0, 7), (7, 14)]  # ends exactly on a full window
    assert split_span(3, 3, 8, 7) == [(3, 3)]
    assert split_span(0, 5, 2, 2) == [(0, 1), (2, 3), (4, 5)]  # s == L: no overlap
    assert split_span(0, 3, 2, 1) == [(0, 1), (1, 2), (2, 3)]
    with pytest.raises(ValueError):
        split_span(5, 4, 8, 7)
    with pytest.raises(ValueError):
        split_span(0, 10, 8, 9)


def test_long_merged_window_is_split_with_one_message_overlap():
    # Hits every 4 messages from 10 to 30 chain into one window [8, 32] of 25 messages.
    ws = build_windows(100, range(10, 31, 4))
    assert [(w.start, w.end) for w in ws] == [(8, 15), (15, 22), (22, 29), (29, 32)]
    assert {w.merged_id for w in ws} == {0} and [w.sub_id for w in ws] == [0, 1, 2, 3]
    assert ws[1].hits == (18, 22) and ws[2].hits == (22, 26)  # a hit on the overlap is in both


def test_clipping_at_history_start_and_end():
    assert merge_spans([0], 100, 2) == [(0, 2)]
    assert merge_spans([1], 100, 2) == [(0, 3)]
    assert merge_spans([99], 100, 2) == [(97, 99)]
    assert merge_spans([0], 1, 5) == [(0, 0)]
    assert merge_spans([2], 5, 10) == [(0, 4)]


def test_distance_2w_merges_and_2w_plus_1_stays_separate():
    assert merge_spans([10, 14], 100, 2) == [(8, 16)]
    # 2w + 1: spans [8, 12] and [13, 17] touch but share no message, so two windows.
    assert merge_spans([10, 15], 100, 2) == [(8, 12), (13, 17)]
    assert merge_spans([10, 11], 100, 0) == [(10, 10), (11, 11)]
    assert merge_spans([10, 10], 100, 0) == [(10, 10)]


def test_transitive_merging():
    # 10-14-18-22 are pairwise 4 apart: one chain although 10 and 22 are 12 apart.
    assert merge_spans([22, 10, 18, 14], 100, 2) == [(8, 24)]


def test_duplicates_and_order_do_not_matter():
    assert merge_spans([30, 13, 10, 13, 30], 100, 2) == merge_spans([10, 13, 30], 100, 2)
    assert build_windows(100, [13, 10, 10]) == build_windows(100, [10, 13])


def test_empty_hits():
    assert merge_spans([], 100, 2) == []
    assert build_windows(100, []) == []
    assert build_windows(0, []) == []
    assert window_stats([]) == {"P": 0, "M": 0, "lengths": [], "processed": 0, "covered": 0, "duplicated": 0}


@pytest.mark.parametrize("bad", [-1, 100, 1000])
def test_hit_outside_history_is_named(bad):
    with pytest.raises(ValueError, match=rf"hit {bad}\b"):
        build_windows(100, [5, bad])


def test_gold_outside_history_is_named():
    with pytest.raises(ValueError, match=r"gold position 100\b"):
        build_windows(100, [5], gold=[100])


def test_gold_is_recorded_per_window():
    ws = build_windows(100, [10, 30], gold=[9, 12, 29, 50])
    assert [w.gold for w in ws] == [(9, 12), (29,)]


def test_sessions_block_expansion_and_merging():
    h = make_history([10, 10, 10])  # sessions start at 0, 10, 20
    assert session_starts(h) == (0, 10, 20)
    apart = WindowConfig(cross_sessions=False)
    # 9 and 11 are 2 apart (would merge) but sit in different sessions.
    assert [(w.start, w.end) for w in build_windows(h, [9, 11], apart)] == [(7, 9), (10, 13)]
    assert [(w.start, w.end) for w in build_windows(h, [9, 11])] == [(7, 13)]
    # A session shorter than the radius clips on both sides.
    h2 = make_history([5, 2, 5])
    assert [(w.start, w.end) for w in build_windows(h2, [5], apart)] == [(5, 6)]
    # Explicit boundaries work with an int length; without them an int cannot say where sessions are.
    assert [(w.start, w.end) for w in build_windows(30, [9, 11], apart, boundaries=[0, 10, 20])] == [(7, 9), (10, 13)]
    with pytest.raises(ValueError, match="boundaries"):
        build_windows(30, [9], apart)
    # cross_sessions=True ignores boundaries.
    assert [(w.start, w.end) for w in build_windows(30, [9, 11], boundaries=[0, 10])] == [(7, 13)]


def test_session_starts_cache_follows_the_object():
    a, b = make_history([3, 3]), make_history([2, 2, 2])
    assert session_starts(a) == (0, 3)
    assert session_starts(b) == (0, 2, 4)
    assert session_starts(a) == (0, 3)
    assert session_starts(History("e", ())) == ()


def test_window_stats_counts_overlap():
    ws = build_windows(100, [10, 14, 18, 50])  # [8, 20] -> (8, 15), (15, 20); [48, 52]
    assert window_stats(ws) == {
        "P": 3,
        "M": 2,
        "lengths": [8, 6, 5],
        "processed": 19,
        "covered": 18,
        "duplicated": 1,
    }


def test_window_record():
    w = Window((4, 5, 6), hits=(5,))
    assert (w.start, w.end, len(w), w.gold, w.merged_id, w.sub_id) == (4, 6, 3, (), 0, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        w.sub_id = 1


def test_no_whole_history_work():
    # No timing (machines are shared): an astronomically long history given as an int
    # would exhaust memory if build_windows did O(n) work over it.
    n = 10**15
    ws = build_windows(n, [0, 4, n - 1])  # 4 - 0 <= 2w: one window
    assert [(w.start, w.end) for w in ws] == [(0, 6), (n - 3, n - 1)]


# --- properties ---------------------------------------------------------------------


@st.composite
def cases(draw, with_sessions=False):
    n = draw(st.integers(1, 120))
    hits = draw(st.lists(st.integers(0, n - 1), max_size=25))
    w = draw(st.integers(0, 6))
    L = draw(st.integers(1, 10))
    s = draw(st.integers(1, L))
    bounds = None
    if with_sessions:
        bounds = sorted({0} | set(draw(st.lists(st.integers(1, max(1, n - 1)), max_size=8))) - {n})
    return n, hits, w, L, s, bounds


def _session(pos, bounds, n):
    if bounds is None:
        return 0, n - 1
    first = max(b for b in bounds if b <= pos)
    later = [b for b in bounds if b > pos]
    return first, (later[0] - 1 if later else n - 1)


@settings(max_examples=200, deadline=None)
@given(cases())
def test_merged_windows_partition_the_hits(case):
    _check_merged(*case)


@settings(max_examples=200, deadline=None)
@given(cases(with_sessions=True))
def test_merged_windows_partition_the_hits_within_sessions(case):
    _check_merged(*case)


def _check_merged(n, hits, w, L, s, bounds):
    spans = merge_spans(hits, n, w, bounds)
    # chronological and disjoint: no message in two merged windows
    for (a1, b1), (a2, b2) in zip(spans, spans[1:]):
        assert a1 <= b1 < a2 <= b2
    # every hit in exactly one merged window
    for h in set(hits):
        assert sum(a <= h <= b for a, b in spans) == 1
    # every window holds a hit, stays in [0, n) and (with sessions) in one session
    for a, b in spans:
        assert 0 <= a <= b < n
        assert any(a <= h <= b for h in hits)
        assert _session(a, bounds, n) == _session(b, bounds, n)
    # the union of merged windows is the union of the individually clipped w-spans
    union = set()
    for h in hits:
        lo, hi = _session(h, bounds, n)
        union |= set(range(max(lo, h - w), min(hi, h + w) + 1))
    assert union == {p for a, b in spans for p in range(a, b + 1)}
    # maximal: neighbouring windows could not have merged under the paper's rule
    for (a1, b1), (a2, b2) in zip(spans, spans[1:]):
        last = max(h for h in hits if a1 <= h <= b1)
        first = min(h for h in hits if a2 <= h <= b2)
        assert first - last > 2 * w or _session(first, bounds, n) != _session(last, bounds, n)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 50), st.integers(0, 60), st.integers(1, 12), st.data())
def test_sub_windows_tile_the_merged_window(start, extra, L, data):
    s = data.draw(st.integers(1, L))
    end = start + extra
    subs = split_span(start, end, L, s)
    assert all(1 <= b - a + 1 <= L for a, b in subs)
    assert subs[0][0] == start and subs[-1][1] == end
    # union is the whole span; starts and ends strictly increase (chronological)
    assert {p for a, b in subs for p in range(a, b + 1)} == set(range(start, end + 1))
    for (a1, b1), (a2, b2) in zip(subs, subs[1:]):
        assert a1 < a2 and b1 < b2
        # Every sub-window but the last is full (it did not reach end), so each
        # consecutive pair overlaps by exactly L - s, the last pair included; only the
        # last sub-window's own length may fall short of L.
        assert b1 - a1 + 1 == L
        assert b1 - a2 + 1 == L - s
    if end - start + 1 <= L:
        assert subs == [(start, end)]


@settings(max_examples=150, deadline=None)
@given(cases(with_sessions=True), st.booleans())
def test_build_windows_consistent_with_spans(case, cross):
    n, hits, w, L, s, bounds = case
    cfg = WindowConfig(w=w, L=L, s=s, cross_sessions=cross)
    ws = build_windows(n, hits, cfg, gold=hits[:3], boundaries=bounds)
    spans = merge_spans(hits, n, w, None if cross else bounds)
    assert len({x.merged_id for x in ws}) == len(spans)
    for m, (a, b) in enumerate(spans):
        subs = [x for x in ws if x.merged_id == m]
        assert [x.sub_id for x in subs] == list(range(len(subs)))
        assert [(x.start, x.end) for x in subs] == split_span(a, b, L, s)
    prev = None
    for x in ws:
        assert x.positions == tuple(range(x.start, x.end + 1))
        assert x.hits == tuple(sorted(h for h in set(hits) if x.start <= h <= x.end))
        assert x.gold == tuple(sorted(g for g in set(hits[:3]) if x.start <= g <= x.end))
        if prev is not None:
            assert (prev.start, prev.end) < (x.start, x.end)
        prev = x
    stats = window_stats(ws)
    assert stats["P"] == len(ws) >= stats["M"] == len(spans)
    assert stats["covered"] == sum(b - a + 1 for a, b in spans)
