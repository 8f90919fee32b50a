"""scripts/keep_counts.py: KEEPs per window against gold per window, on the three kinds of window rows
(training pairs, a window evaluation's decoded windows, an eval run's windows), hand-built; and the real
pairs the generator writes (every window holds at most one gold message)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from script_loader import load_script


def _script():
    return load_script("keep_counts")


def _write(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_window_counts_of_each_kind():
    kc = _script()
    run_row = {
        "gold": [2, 3],
        "decisions": [{"pos": 1, "op": "KEEP"}, {"pos": 2, "op": "DROP"}, {"pos": 3, "op": "KEEP"}, "garbage"],
    }
    assert kc.window_counts(run_row) == (2, 2, 1)
    assert kc.window_counts({"gold": [], "decisions": None}) == (0, 0, 0)  # a failed window
    assert kc.window_counts({"gold_labels": [False, True, False]}) == (1, 1, 1)
    assert kc.window_counts({"n_gold": 1, "n_keep": 1, "gold_kept": 0}) == (1, 1, 0)
    with pytest.raises(ValueError, match="neither decisions"):
        kc.window_counts({"prompt": "x"})


def test_summary_counts_lost_gold_when_another_was_kept(tmp_path, capsys):
    kc = _script()
    decoded = _write(
        tmp_path / "windows.jsonl",
        [
            {"n_gold": 1, "n_keep": 1, "gold_kept": 0},  # kept another instead
            {"n_gold": 1, "n_keep": 0, "gold_kept": 0},  # kept nothing
            {"n_gold": 1, "n_keep": 2, "gold_kept": 1},
            {"n_gold": 0, "n_keep": 0, "gold_kept": 0},
        ],
    )
    s = kc.summarise(kc.rows_of(tmp_path))  # a directory reads its windows.jsonl
    assert s["joint"] == {"0 gold, 0 keep": 1, "1 gold, 0 keep": 1, "1 gold, 1 keep": 1, "1 gold, 2 keep": 1}
    assert (s["gold_windows"], s["gold_messages"], s["gold_kept"]) == (3, 3, 1)
    assert s["gold_windows_lost_gold_kept_other"] == 1
    assert s["share_windows_2plus_keep"] == 0.25 and s["share_windows_2plus_gold"] == 0.0
    out = tmp_path / "o" / "k.json"
    assert kc.main([str(decoded), "--out", str(out)]) == 0
    assert "| 1 / 3 | 1 / 3 |" in capsys.readouterr().out
    assert json.loads(out.read_text())[str(decoded)]["windows"] == 4


def test_bad_input_names_file_and_line(tmp_path):
    kc = _script()
    bad = tmp_path / "w.jsonl"
    bad.write_text('{"n_gold": 0, "n_keep": 0}\nnot json\n', encoding="utf-8")
    with pytest.raises(SystemExit, match=r"w.jsonl: line 2 is not JSON"):
        kc.summarise(kc.rows_of(bad))
    with pytest.raises(SystemExit, match="no such file"):
        list(kc.rows_of(tmp_path / "gone"))


def test_generated_pairs_hold_at_most_one_gold_per_window(tmp_path):
    """The real generator through the real pair builder: v2's recipe never shows a window two gold messages
    (the fact this script was written to measure)."""
    from lazymem.retrieve import RetrievalConfig
    from lazymem.train.sft_data import SFTDataConfig, build_sft_data

    build_sft_data(
        SFTDataConfig(
            datasets=("synthetic:messages=150,seed=1,histories=1,questions=6,varied=1",),
            retrieval=RetrievalConfig(n=6, dense_model=None, disk_cache=False),
            teacher="gold",
            questions=None,
            split=None,
            balance=False,
            progress=False,
            output_dir=str(tmp_path / "pairs"),
        )
    )
    kc = _script()
    s = kc.summarise(kc.rows_of(tmp_path / "pairs" / "sft.jsonl"))
    assert s["windows"] > 0 and s["gold_windows"] > 0
    assert s["share_windows_2plus_gold"] == 0.0
