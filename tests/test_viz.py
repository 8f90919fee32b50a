"""lazymem.viz: figures from hand-made windows and decisions, the HTML explorer, saving."""

import shutil
import sys
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazymem import viz
from lazymem.construct import Decision, GateVerdict
from lazymem.records import History, Message
from lazymem.retrieve import WindowConfig, build_windows

go = pytest.importorskip("plotly.graph_objects")


def make_history(n=30):
    texts = {i: f"message {i} about Lisbon" if i % 5 == 0 else f"small talk {i}" for i in range(n)}
    texts[12] = "I moved to <Lisbon> & love it"  # needs escaping in HTML
    msgs = (
        tuple(
            Message(
                i,
                f"s{i // 10}#{i % 10}",
                f"s{i // 10}",
                i % 10,
                "user" if i % 2 == 0 else "assistant",
                texts[i],
                f"2023/05/{20 + i // 10:02d}",
            )
            for i in range(n)
        )
        if n
        else ()
    )
    return History("h", msgs)


@pytest.fixture
def case():
    """Windows [8..15] and [18..22] around hits 10, 13 and 20 (w=2), gold at 12, second window failed."""
    history = make_history()
    windows = build_windows(history, [10, 13, 20], WindowConfig(w=2), gold=[12])
    assert [(w.start, w.end) for w in windows] == [(8, 15), (18, 22)]
    ok = GateVerdict(
        True,
        "ok",
        tuple(
            Decision(p, "KEEP" if p in (12, 13) else "DROP", f"kept {p}" if p in (12, 13) else "") for p in range(8, 16)
        ),
        "[...]",
    )
    bad = GateVerdict(False, "wrong_count", (), "[]", "2 decisions for 5 messages")
    return history, windows, [ok, bad]


def test_window_records_from_windows_and_verdicts(case):
    history, windows, verdicts = case
    recs = viz.window_records(windows, gate=verdicts)
    assert recs[0]["positions"] == list(range(8, 16)) and recs[0]["hits"] == [10, 13] and recs[0]["gold"] == [12]
    assert recs[0]["verdict"] == {"ok": True, "reason": "ok", "detail": ""}
    assert [d["op"] for d in recs[0]["decisions"]][4:6] == ["KEEP", "KEEP"]
    assert recs[1]["verdict"]["ok"] is False and recs[1]["decisions"] is None
    assert viz.window_records(recs) == recs  # idempotent: run records pass through unchanged


def test_window_records_flat_and_per_window_decisions(case):
    history, windows, _ = case
    flat = [Decision(12, "KEEP", "x"), {"pos": 20, "op": "DROP", "compressed_content": ""}]
    recs = viz.window_records(windows, decisions=flat)
    assert recs[0]["decisions"] == [{"pos": 12, "op": "KEEP", "content": "x"}]
    assert recs[1]["decisions"] == [{"pos": 20, "op": "DROP", "content": ""}]
    per = viz.window_records(windows, decisions=[None, [Decision(18, "KEEP", "y")]])
    assert per[0]["decisions"] is None and per[1]["decisions"][0]["content"] == "y"
    with pytest.raises(ValueError, match="3 entries for 2 windows"):
        viz.window_records(windows, decisions=[[], [], []])
    with pytest.raises(ValueError, match="1 verdicts for 2 windows"):
        viz.window_records(windows, gate=[True])


def test_cell_states(case):
    history, windows, verdicts = case
    recs = viz.window_records(windows, gate=verdicts)
    s0 = viz.cell_states(recs[0])
    assert s0[12] == ("KEEP", "kept 12") and s0[8] == ("DROP", "")
    assert set(viz.cell_states(recs[1]).values()) == {("fail", "")}
    partial = viz.window_records([{"positions": [1, 2], "decisions": [{"pos": 1, "op": "KEEP", "content": "a"}]}])[0]
    assert viz.cell_states(partial) == {1: ("KEEP", "a"), 2: ("none", "")}


@settings(max_examples=40, deadline=None)
@given(hits=st.sets(st.integers(0, 39), max_size=8), w=st.integers(0, 3), keep=st.sets(st.integers(0, 39)))
def test_cell_states_cover_each_window_position_once(hits, w, keep):
    windows = build_windows(40, hits, WindowConfig(w=w))
    decisions = [
        [Decision(p, "KEEP" if p in keep else "DROP", "c" if p in keep else "") for p in win.positions]
        for win in windows
    ]
    for win, rec in zip(windows, viz.window_records(windows, decisions=decisions)):
        states = viz.cell_states(rec)
        assert list(states) == list(win.positions)
        assert all((s == "KEEP") == (p in keep) for p, (s, _) in states.items())


def test_window_strip(case):
    history, windows, verdicts = case
    q = {"id": "q1", "type": "single-session-user", "text": "Where did I move?", "evidence": [12]}
    fig = viz.window_strip(history, windows, gate=verdicts, question=q)
    heat = fig.data[0]
    assert heat.type == "heatmap"
    codes = viz.STATE_CODE
    assert list(heat.z[0]) == [codes["DROP"]] * 4 + [codes["KEEP"]] * 2 + [codes["DROP"]] * 2
    assert list(heat.z[1]) == [codes["fail"]] * 5 + [None] * 3  # shorter window: padded, not coloured
    assert [list(r) for r in heat.text][1][:5] == ["18", "19", "20", "21", "22"]
    hover = heat.customdata[0][4]
    assert "I moved to &lt;Lisbon&gt; &amp; love it" in hover and "kept 12" in hover and "GOLD" in hover
    assert "wrong_count" in heat.customdata[1][0]
    hits, gold = fig.data[1], fig.data[2]
    assert len(hits.x) == 3 and len(gold.x) == 1
    assert {t.name for t in fig.data[3:]} == {"KEEP", "DROP", "gate failure", "not processed"}
    assert "q1" in fig.layout.title.text and "Where did I move?" in fig.layout.title.text


def test_window_strip_without_decisions_is_not_processed():
    history = make_history(10)
    fig = viz.window_strip(history, build_windows(history, [5], WindowConfig(w=1)))
    assert list(fig.data[0].z[0]) == [viz.STATE_CODE["none"]] * 3


def test_all_at_k_vs_w_inputs_and_paper_reference():
    from lazymem.eval.paper import all_at_50_reference

    fig = viz.all_at_k_vs_w({"0": 0.5, "2": 0.75, "1": 0.6}, paper=all_at_50_reference(True))
    assert list(fig.data[0].x) == [0, 1, 2] and list(fig.data[0].y) == [0.5, 0.6, 0.75]
    assert [t.name for t in fig.data[1:]] == ["LongMemEval (paper)", "LoCoMo (paper)"]
    assert list(fig.data[2].y) == [0.781, 0.847, 0.889, 0.892]  # LoCoMo, paper Table 2
    table = {"all_at_k": {"0": 0.9, "1": None}, "k": 50}  # a coverage_table result; None skipped
    assert list(viz.all_at_k_vs_w(table).data[0].x) == [0]
    multi = viz.all_at_k_vs_w({"bm25": {0: 0.1}, "hybrid": {0: 0.2}}, paper=all_at_50_reference("locomo"))
    assert [t.name for t in multi.data] == ["bm25", "hybrid", "LoCoMo (paper)"]
    assert len(viz.all_at_k_vs_w({0: 1.0}, paper=all_at_50_reference("")).data) == 1  # no reference lines
    with pytest.raises(ValueError, match="paper reference 'nope'"):
        all_at_50_reference("nope")
    with pytest.raises(TypeError, match="all_at_50_reference"):
        viz.all_at_k_vs_w({0: 1.0}, paper="locomo")


def test_histograms_and_tables(case):
    history, windows, _ = case
    fig = viz.window_length_hist({"q1": windows, "q2": [3, 5], "q3": [{"positions": [1, 2]}]})
    assert list(fig.data[0].x) == [8, 5, 3, 5, 2] and list(fig.data[1].x) == [2, 2, 1]
    summary = {"name": "d", "questions_by_type": {"multi-session": 3, "temporal-reasoning": 1}}
    assert list(viz.type_counts(summary).data[0].y) == [3, 1]
    counts = {"b": {"total": 3, "train": 2, "validation": 0, "test": 1}, "a": {"total": 1, "train": 1}}
    cells = viz.split_table_fig(counts).data[0].cells.values
    assert list(cells[0]) == ["a", "b", "total"] and list(cells[1]) == [1, 3, 4] and list(cells[3]) == [0, 0, 0]
    stats = viz.history_stats({"h1": 10, "h2": 20}, [1, 2], [0.0, 0.5])
    assert len(stats.data) == 3 and list(stats.data[0].x) == [10, 20]


def test_window_explorer_html(case):
    history, windows, verdicts = case
    q = {"id": "q<1>", "type": "single-session-user", "text": "Where did I move?", "answer": "Lisbon", "evidence": [12]}
    page = viz.window_explorer_html(
        history,
        viz.window_records(windows, gate=verdicts),
        q,
        memory="[2023/05/21] user: kept 12",
        answer="Lisbon",
        judge="yes",
    )
    assert "I moved to &lt;Lisbon&gt; &amp; love it" in page and "<Lisbon>" not in page
    assert "q&lt;1&gt;" in page
    assert page.count('<tr class="KEEP">') == 2 and page.count('<tr class="fail">') == 5
    assert page.count('class="badge hit"') == 3 and page.count('class="badge gold"') == 1
    assert "gate failed: wrong_count" in page and "Final memory (1 lines)" in page
    assert "<h4>Judge</h4>" in page and "2 windows, 1 passed" in page
    bare = viz.window_explorer_html(history, windows)  # plain Windows work too
    assert "not gated" in bare and "Final memory" not in bare


def test_explorer_view(case):
    history, windows, verdicts = case
    view = {"history": history, "records": viz.window_records(windows, gate=verdicts), "question": None, "memory": "m"}
    fig, page = viz.explorer_view(view)
    assert fig.data[0].type == "heatmap" and "Final memory" in page


def test_save_figures_html_stable_and_names_checked(tmp_path):
    fig = viz.all_at_k_vs_w({0: 0.5, 1: 0.7})
    out = viz.save_figures({"cov": fig}, tmp_path, png=False)
    assert out == {"cov": {"html": str(tmp_path / "cov.html"), "png": None}}
    first = (tmp_path / "cov.html").read_bytes()
    # plotly.js sits once beside the figures (offline, no CDN), not inside each file
    assert b'id="cov"' in first and b'<script src="http' not in first and b'src="plotly.min.js"' in first
    assert (tmp_path / "plotly.min.js").stat().st_size > 1_000_000
    viz.save_figure(fig, "cov", tmp_path, png=False)
    assert (tmp_path / "cov.html").read_bytes() == first
    with pytest.raises(ValueError, match="figure name"):
        viz.save_figures({"../evil": fig}, tmp_path, png=False)


def test_save_figures_warns_and_writes_html_when_png_impossible(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "kaleido", None)  # import kaleido -> ImportError
    with pytest.warns(RuntimeWarning, match="apt-get install -y chromium"):
        out = viz.save_figure(viz.all_at_k_vs_w({0: 0.5}), "cov", tmp_path)
    assert out["png"] is None and (tmp_path / "cov.html").exists() and not (tmp_path / "cov.png").exists()


@pytest.mark.slow
@pytest.mark.skipif(
    not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")),
    reason="no Chromium for kaleido: apt-get install -y chromium",
)
def test_save_figures_png(tmp_path, case):
    history, windows, verdicts = case
    figs = {
        "strip": viz.window_strip(history, windows, gate=verdicts),
        "cov": viz.all_at_k_vs_w({0: 0.5}),
        "sized": viz.all_at_k_vs_w({0: 0.5}).update_layout(width=900, height=420),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out = viz.save_figures(figs, tmp_path)
    for name in figs:
        png = tmp_path / f"{name}.png"
        assert out[name]["png"] == str(png) and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import struct

    # the image has the figure's own layout size, not kaleido's default 700 x 500
    assert struct.unpack(">II", (tmp_path / "sized.png").read_bytes()[16:24]) == (900, 420)


@given(st.lists(st.tuples(st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.9]), st.booleans()), min_size=2, max_size=30))
@settings(max_examples=80, deadline=None)
def test_roc_curve_area_is_the_probe_auc_and_runs_from_nothing_to_everything(lines):
    from lazymem.train.probe import auc, roc_curve

    pos = [p for p, g in lines if g]
    neg = [p for p, g in lines if not g]
    pts = roc_curve(pos, neg)
    if not pos or not neg:
        assert pts == []
        return
    assert pts[0] == (0.0, 0.0) and pts[-1] == (1.0, 1.0)
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(pts, pts[1:]))  # thresholds only fall
    area = sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(pts, pts[1:]))
    assert area == pytest.approx(auc(pos, neg))


def test_keep_probe_roc_one_line_per_record_and_its_chosen_bias():
    good = {
        "auc": 1.0,
        "gold_lines": 2,
        "scores": [[[0.9, True], [0.1, False]], [[0.8, True], [0.2, False]]],
        "chosen": {"keep_bias": 1.386294, "gold_recall": 1.0, "nongold_keep_rate": 0.0},
    }
    chance = {"auc": 0.5, "gold_lines": 1, "scores": [[[0.5, True], [0.5, False]]]}
    empty = {"auc": None, "scores": [[[0.4, False]]]}  # no gold line: no curve, no error
    from lazymem.train.probe import record_roc

    fig = viz.keep_probe_roc(
        {k: {**r, "roc": record_roc(r)} for k, r in (("trained", good), ("untrained", chance), ("none", empty))}
    )
    lines = [t for t in fig.data if t.mode == "lines"]
    assert [t.name.split(" (")[0] for t in lines] == ["chance", "trained", "untrained"]
    assert "AUC 1.000, 2 gold lines" in lines[1].name
    assert list(lines[1].x) == [0.0, 0.0, 0.0, 0.5, 1.0] and list(lines[1].y) == [0.0, 0.5, 1.0, 1.0, 1.0]
    markers = [t for t in fig.data if t.mode == "markers"]
    assert len(markers) == 1 and (markers[0].x[0], markers[0].y[0]) == (0.0, 1.0)
    assert "1.386" in markers[0].hovertemplate
