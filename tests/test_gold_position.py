"""scripts/gold_position.py: where gold sits relative to the retrieval hits (real retriever, BM25, on the
generator), and what a run's window records kept of gold hits and gold neighbours (hand-built records)."""

from __future__ import annotations

import json

from script_loader import load_script


def _script():
    return load_script("gold_position")


def test_kept_counts_gold_and_nongold_on_hits_and_neighbours(tmp_path, capsys):
    gp = _script()
    run = tmp_path / "run"
    run.mkdir()
    windows = [
        {
            "positions": [1, 2, 3],
            "hits": [2],
            "gold": [1, 2],
            "decisions": [{"pos": 1, "op": "DROP"}, {"pos": 2, "op": "KEEP"}, {"pos": 3, "op": "KEEP"}],
        },
        {
            "positions": [7, 8],
            "hits": [8],
            "gold": [7],
            "decisions": [{"pos": 7, "op": "KEEP"}, {"pos": 8, "op": "DROP"}],
        },
        {"positions": [9], "hits": [9], "gold": [], "decisions": []},  # a failed window: no decisions
    ]
    (run / "windows.jsonl").write_text("".join(json.dumps(w) + "\n" for w in windows), encoding="utf-8")
    row = gp.kept_positions(run)
    assert row["gold_hit"] == {"decisions": 1, "kept": 1}
    assert row["gold_neighbour"] == {"decisions": 2, "kept": 1}
    assert row["nongold_hit"] == {"decisions": 1, "kept": 0}
    assert row["nongold_neighbour"] == {"decisions": 1, "kept": 1}
    # a run without window records is named and left out, the others still counted
    out = tmp_path / "o" / "kept.json"
    assert gp.main(["kept", str(run), str(tmp_path / "gone"), "--out", str(out)]) == 0
    assert "gone: no windows.jsonl" in capsys.readouterr().err
    assert [r["run"] for r in json.loads(out.read_text())] == [str(run)]


def test_data_positions_on_the_generator_with_the_real_retriever():
    gp = _script()
    from lazymem.data.datasets import load_dataset
    from lazymem.retrieve import RetrievalConfig

    spec = "synthetic:messages=80,seed=0,histories=1,questions=6"
    row = gp.data_positions(spec, RetrievalConfig(n=5, sparse="rank_bm25", dense_model=None, reranker=None), 6)
    ds = load_dataset(spec)
    shares = [row[k]["share"] for k in ("hit", "neighbour_1", "neighbour_2", "unseen") if row[k]["share"]]
    assert row["gold"] == sum(len(q.evidence) for q in ds.questions if q.evidence) > 0
    assert abs(sum(shares) - 1) < 0.01 and row["hit"]["share"] > 0  # BM25 finds some gold outright
