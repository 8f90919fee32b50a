"""lazymem.sweep: the one sweep engine, on toy cells and through its consumers (eval-table, the window table)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from fakerun import PIPELINE, _private_cache  # noqa: F401  (an autouse fixture)

from lazymem.sweep import PREVIOUS_PREFIX, Cell, json_changes, run_cells, set_aside, write_table

# --- toy cells: a cell's result is one file holding its spec ------------------------------------------


def toy_check(cell: Cell) -> list[str] | None:
    p = cell.folder / "out.txt"
    if not p.exists():
        return None
    return [] if p.read_text() == cell.spec else [f"spec: {p.read_text()} -> {cell.spec}"]


class ToyRun:
    """Writes the cell's spec; raises for a spec starting with 'boom'; counts its calls."""

    def __init__(self):
        self.calls: list[tuple[tuple[str, ...], tuple[str, ...]]] = []

    def __call__(self, cell: Cell, changes: tuple[str, ...]) -> str:
        self.calls.append((cell.key, changes))
        if cell.spec.startswith("boom"):
            raise ValueError(f"cell {cell.key[0]} broke")
        cell.folder.mkdir(parents=True, exist_ok=True)
        (cell.folder / "out.txt").write_text(cell.spec)
        return cell.spec


def toy_cells(root: Path, specs: dict[str, str], only: tuple[str, ...] = ()) -> list[Cell]:
    return [Cell((k,), root / k, v, selected=not only or k in only, results=("out.txt",)) for k, v in specs.items()]


def sweep(cells, run, **kw):
    return run_cells(
        cells, check=toy_check, run=run, load=lambda c: (c.folder / "out.txt").read_text(), progress=None, **kw
    )


def test_cells_run_once_then_are_reused(tmp_path):
    run = ToyRun()
    first = sweep(toy_cells(tmp_path, {"a": "1", "b": "2"}), run)
    assert [(o.status, o.result) for o in first] == [("ran", "1"), ("ran", "2")]
    again = sweep(toy_cells(tmp_path, {"a": "1", "b": "2"}), run)
    assert [(o.status, o.result) for o in again] == [("reused", "1"), ("reused", "2")]
    assert run.calls == [(("a",), ()), (("b",), ())]  # nothing run the second time
    assert all(o.mark() == {} and o.shown for o in again)


def test_a_stale_cell_is_recomputed_with_its_old_results_set_aside(tmp_path):
    run = ToyRun()
    sweep(toy_cells(tmp_path, {"a": "1", "b": "2"}), run)
    (o_a, o_b) = sweep(toy_cells(tmp_path, {"a": "1", "b": "3"}), run)
    assert o_a.status == "reused" and (o_b.status, o_b.result, o_b.changes) == ("recomputed", "3", ("spec: 2 -> 3",))
    assert run.calls[-1] == (("b",), ("spec: 2 -> 3",)) and o_b.mark() == {"recomputed": "spec: 2 -> 3"}
    (prev,) = [p for p in (tmp_path / "b").iterdir() if p.is_dir()]
    assert prev.name == o_b.set_aside_to and prev.name.startswith(PREVIOUS_PREFIX)
    assert (prev / "out.txt").read_text() == "2" and (tmp_path / "b" / "out.txt").read_text() == "3"


def test_only_leaves_other_cells_alone_fresh_shown_stale_flagged_empty_skipped(tmp_path):
    run = ToyRun()
    sweep(toy_cells(tmp_path, {"a": "1", "b": "2"}), run)
    cells = toy_cells(tmp_path, {"a": "1", "b": "changed", "c": "new", "d": "x"}, only=("d",))
    out = {o.cell.key[0]: o for o in sweep(cells, run)}
    assert {k: o.status for k, o in out.items()} == {"a": "reused", "b": "stale", "c": "skipped", "d": "ran"}
    assert out["b"].result is None and not out["b"].shown and out["b"].mark() == {"stale": "spec: 2 -> changed"}
    assert [k for k, _ in run.calls[2:]] == [("d",)]  # only the selected cell ran
    assert (tmp_path / "b" / "out.txt").read_text() == "2" and not (tmp_path / "c").exists()


def test_a_failing_cell_is_recorded_and_the_rest_still_run(tmp_path):
    run = ToyRun()
    cells = toy_cells(tmp_path, {"a": "1", "b": "boom", "c": "3"})
    out = sweep(cells, run, catch=True)
    assert [o.status for o in out] == ["ran", "failed", "ran"]
    assert out[1].error == "ValueError: cell b broke" and out[1].mark() == {"failed": "ValueError: cell b broke"}
    assert out[1].result is None and not out[1].shown
    # without catch the error stops the sweep
    with pytest.raises(ValueError, match="cell b broke"):
        sweep(toy_cells(tmp_path / "other", {"a": "1", "b": "boom", "c": "3"}), run)
    assert not (tmp_path / "other" / "c").exists()
    # a failed cell has no results: it runs again next time
    assert [o.status for o in sweep(cells, run, catch=True)] == ["reused", "failed", "reused"]


def test_resume_hands_fresh_selected_cells_to_run_and_progress_lines_say_what_runs(tmp_path, capsys):
    run = ToyRun()
    sweep(toy_cells(tmp_path, {"a": "1", "b": "2"}), run)
    out = run_cells(toy_cells(tmp_path, {"a": "1", "b": "3"}), check=toy_check, run=run, resume=True, label="t")
    assert [o.status for o in out] == ["resumed", "recomputed"] and run.calls[-2:] == [
        (("a",), ()),
        (("b",), ("spec: 2 -> 3",)),
    ]
    assert capsys.readouterr().out.splitlines() == ["[t] a", "[t] b (recomputed: spec: 2 -> 3)"]
    with pytest.raises(ValueError, match="progress"):
        run_cells([], check=toy_check, run=run, progress="loud")


def test_set_aside_never_overwrites_and_write_table_writes_both_files(tmp_path):
    for i in range(3):
        (tmp_path / "r.json").write_text(str(i))
        assert set_aside(tmp_path, ["r.json", "missing.json"]) is not None
    kept = sorted((p / "r.json").read_text() for p in tmp_path.iterdir() if p.name.startswith(PREVIOUS_PREFIX))
    assert kept == ["0", "1", "2"] and set_aside(tmp_path, ["r.json"]) is None
    write_table(tmp_path / "t", {"s": {"r": {"x": 1}}}, "## s\n")
    assert json.loads((tmp_path / "t" / "table.json").read_text()) == {"s": {"r": {"x": 1}}}
    assert (tmp_path / "t" / "table.md").read_text() == "## s\n"
    assert json_changes({"mpm": {"adapter": "a"}}, {"mpm": {"adapter": "b"}}) == ["mpm.adapter: a -> b"]


# --- through the consumers -------------------------------------------------------------------------------


def test_eval_table_through_the_engine_recomputes_a_changed_row_and_flags_one_left_out(tmp_path, capsys):
    """The real eval runner (fake language models): a row whose settings change is recomputed with its
    old run set aside when selected, and shown as stale (no numbers) when ``only`` leaves it out."""
    from lazymem.eval.table import EvalTableConfig, run_eval_table
    from lazymem.llm import FakeBackend

    base = tmp_path / "base.yaml"
    base.write_text(
        yaml.safe_dump(
            {
                "dataset": "synthetic:messages=60,seed=1,histories=1,questions=6",
                "limit": 2,
                "judge": "none",
                "count_tokens": False,
                "pipeline": PIPELINE,
            }
        )
    )
    out = tmp_path / "t"

    def table(rows, only=()):
        cfg = EvalTableConfig(base=str(base), sets={"syn": {}}, rows=rows, only=only, output_dir=str(out))
        return run_eval_table(cfg, clients_for=lambda s, r: {"answer": FakeBackend(lambda p, sp: "x")})

    rows = {"rag3": {"pipeline.retrieval.n": 3}, "rag2": {"pipeline.retrieval.n": 2}}
    first = table(rows)
    assert [first["syn"][r]["questions"] for r in rows] == [2, 2]
    assert "[eval-table] syn / rag3" in capsys.readouterr().out
    changed = dict(rows, rag2={"pipeline.retrieval.n": 4})
    left_out = table(changed, only=("rag3",))
    assert left_out["syn"]["rag2"]["questions"] is None and "config_sha256" in left_out["syn"]["rag2"]["stale"]
    assert "- rag2 stale, not shown" in (out / "table.md").read_text()
    redone = table(changed)
    assert redone["syn"]["rag2"]["questions"] == 2 and "config_sha256" in redone["syn"]["rag2"]["recomputed"]
    assert "recomputed" not in redone["syn"]["rag3"]
    prev = [p for p in (out / "syn" / "rag2").iterdir() if p.name.startswith(PREVIOUS_PREFIX)]
    assert len(prev) == 1 and (prev[0] / "records.jsonl").is_file()
    assert json.loads((out / "table.json").read_text()) == redone


def test_window_table_through_the_engine_sets_aside_a_cell_of_other_settings(tmp_path, monkeypatch):
    """The real window evaluation (a scripted model): a row's changed settings make its cell stale,
    flagged when left out, recomputed with windows.jsonl and summary.json set aside when run."""
    import lazymem.llm
    from lazymem.llm import FakeBackend
    from lazymem.train.window_table import WindowTableConfig, run_window_table

    monkeypatch.setattr(
        lazymem.llm,
        "make_client",
        lambda config, responses=None: FakeBackend(
            lambda p, s: '[{"op": "DROP", "compressed_content": "", "reason": ""}]', model=config.model
        ),
    )
    data = tmp_path / "pairs.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {"prompt": [{"role": "user", "content": f"w {i}"}], "decision_positions": [i], "gold_labels": [i == 0]}
            )
            + "\n"
            for i in range(3)
        )
    )
    rows = {"a": {"mpm": {"backend": "fake", "model": "a"}}, "b": {"mpm": {"backend": "fake", "model": "b"}}}
    out = tmp_path / "t"
    first = run_window_table(WindowTableConfig(sets={"s": str(data)}, rows=rows, output_dir=str(out)), progress=False)
    assert first["s"]["b"]["windows"] == 3 and first["s"]["b"]["gate_fmt"] == 1.0
    changed = dict(rows, b={"mpm": {"backend": "fake", "model": "b2"}})
    left_out = run_window_table(
        WindowTableConfig(sets={"s": str(data)}, rows=changed, only=("a",), output_dir=str(out)), progress=False
    )
    assert left_out["s"]["a"] == first["s"]["a"] and left_out["s"]["b"] == {"stale": "mpm.model: b -> b2"}
    md = (out / "table.md").read_text()
    assert "| b | - | - |" in md and "- b stale, not shown: its results are of other settings" in md
    redone = run_window_table(
        WindowTableConfig(sets={"s": str(data)}, rows=changed, output_dir=str(out)), progress=False
    )
    assert redone["s"]["b"]["model"] == "b2" and redone["s"]["b"]["recomputed"] == "mpm.model: b -> b2"
    (prev,) = [p for p in (out / "s" / "b").iterdir() if p.name.startswith(PREVIOUS_PREFIX)]
    assert json.loads((prev / "summary.json").read_text())["model"] == "b" and (prev / "windows.jsonl").is_file()
    assert "recomputed" not in json.loads((out / "s" / "b" / "summary.json").read_text())  # a table note only


def test_window_table_as_local_jobs_gives_the_inline_table(tmp_path):
    """The window table's cells as real processes (submitit's LocalExecutor): the same table as inline,
    the cells' jobs in <output_dir>/jobs/jobs.json; a second run reuses every cell (no job)."""
    from lazymem.jobs import read_index
    from lazymem.train.window_table import WindowTableConfig, run_window_table

    data = tmp_path / "pairs.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {"prompt": [{"role": "user", "content": f"w {i}"}], "decision_positions": [i], "gold_labels": [i == 0]}
            )
            + "\n"
            for i in range(3)
        )
    )
    rows = {"a": {"mpm": {"backend": "fake", "model": "a"}}, "b": {"mpm": {"backend": "fake", "model": "b"}}}

    def table(kind):
        cfg = WindowTableConfig(sets={"s": str(data)}, rows=rows, output_dir=str(tmp_path / kind), executor=kind)
        return run_window_table(cfg, progress=False, command=["lazymem", "train", "eval-windows"])

    inline, local = table("inline"), table("local")
    assert local == inline and local["s"]["b"]["windows"] == 3
    index = read_index(tmp_path / "local")
    assert [(e["key"], e["state"]) for e in index["jobs"]] == [(["s", "a"], "done"), (["s", "b"], "done")]
    assert table("local") == inline and read_index(tmp_path / "local")["jobs"] == index["jobs"]
