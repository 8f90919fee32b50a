"""Message-length report (lazymem.data.lengths, `lazymem data lengths`) on tiny generated specs."""

from __future__ import annotations

import json
from pathlib import Path

from lazymem.data import load_dataset
from lazymem.data.lengths import distribution, lengths_table, message_lengths

ROOT = Path(__file__).resolve().parents[1]
PLAIN = "synthetic:messages=60,seed=1,histories=1,questions=6"
LONG = "synthetic:messages=60,seed=1,histories=1,questions=6,long=1"
CASUAL = "synthetic-casual:conversations=1,sessions=4,seed=1,questions=6"


def test_distribution_by_hand():
    d = distribution([10, 0, 5, 5, 20])
    assert d == {"n": 5, "mean": 8.0, "median": 5.0, "p10": 2.0, "p90": 16.0, "p99": 19.6, "max": 20}
    assert distribution([])["mean"] is None


def test_role_kinds_and_counts_match_the_messages():
    plain, casual = load_dataset(PLAIN), load_dataset(CASUAL)
    p, c = message_lengths(plain), message_lengths(casual)
    assert set(p) == {"user", "assistant"} and set(c) == {"named speaker"}
    assert p["user"]["words"]["n"] + p["assistant"]["words"]["n"] == 60
    msgs = [m for h in casual.histories.values() for m in h]
    assert c["named speaker"]["chars"]["n"] == len(msgs)
    assert c["named speaker"]["chars"]["max"] == max(len(m.text) for m in msgs)
    # long=1 makes assistant turns longer, user turns unchanged
    lg = message_lengths(load_dataset(LONG))
    assert lg["assistant"]["words"]["mean"] > 2 * p["assistant"]["words"]["mean"]
    assert lg["user"]["words"] == p["user"]["words"]
    assert "| synthetic" in lengths_table({PLAIN: p}) and lengths_table({PLAIN: p}).count("\n") == 3


def test_command_prints_both_units_and_writes_json(tmp_path, capsys):
    from lazymem.cli import main

    assert main(["data", "lengths", PLAIN, CASUAL, "--json", str(tmp_path / "l.json")]) == 0
    out = capsys.readouterr().out
    assert "words" in out and "characters" in out and out.count("| named speaker |") == 2
    assert set(json.loads((tmp_path / "l.json").read_text())) == {PLAIN, CASUAL}


LONG2 = "synthetic:messages=400,seed=22,histories=3,questions=10,varied=1,long=2"
LONGMEMEVAL_S = ROOT.parent / "shared" / "data" / "longmemeval" / "s_fragment_3haystacks.json"


def test_long2_spans_longmemeval_s_lengths():
    # long=2 is for real lengths: LongMemEval_S's assistant turns have median 311.5 words, p10 130, p90 484,
    # max 659; its user turns median 35, p90 67, p99 249 (docs/results/message_lengths/lengths.md)
    stats = message_lengths(load_dataset(LONG2))
    a, u = stats["assistant"]["words"], stats["user"]["words"]
    assert 260 <= a["median"] <= 360 and 100 <= a["p10"] <= 180 and 420 <= a["p90"] <= 560 and a["max"] >= 600
    assert 25 <= u["median"] <= 50 and 50 <= u["p90"] <= 90 and u["p99"] >= 150


def test_long2_beside_the_real_haystacks():
    import pytest

    if not LONGMEMEVAL_S.exists():
        pytest.skip(f"{LONGMEMEVAL_S} not here")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        real = message_lengths(load_dataset(str(LONGMEMEVAL_S)))["assistant"]["words"]
    ours = message_lengths(load_dataset(LONG2))["assistant"]["words"]
    # the generator's assistant turns span the real ones: medians within 15%, a maximum past the real p99
    assert abs(ours["median"] - real["median"]) <= 0.15 * real["median"] and ours["max"] >= real["p99"]
