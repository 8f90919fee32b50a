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
