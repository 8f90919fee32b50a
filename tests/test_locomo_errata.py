"""LoCoMo errata as data: audit status, corrected evidence and answers on questions, audited measures."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import pytest
import yaml
from fakerun import FAKE, _private_cache  # noqa: F401  (an autouse fixture)

from lazymem.data import load_dataset, load_locomo
from lazymem.data.locomo import errata_sha256
from lazymem.errors import ConfigError, LoadError
from lazymem.eval.memory_measures import audited_summary
from lazymem.eval.table import table_row


def _turns(session: int, texts: list[tuple[str, str]]) -> list[dict]:
    return [{"speaker": who, "dia_id": f"D{session}:{t + 1}", "text": text} for t, (who, text) in enumerate(texts)]


def _samples() -> list[dict]:
    """Two LoCoMo-shaped samples; the errata below point into the second (sample index 1)."""
    first = {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": _turns(1, [("Ann", "I got a puppy."), ("Bob", "Nice!")]),
        },
        "qa": [{"question": "What did Ann get?", "answer": "a puppy", "evidence": ["D1:1"], "category": 4}],
    }
    second = {
        "sample_id": "conv-2",
        "conversation": {
            "speaker_a": "Cleo",
            "speaker_b": "Dan",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": _turns(
                1,
                [
                    ("Cleo", "I live in Rome now."),
                    ("Dan", "Lovely city."),
                    ("Cleo", "I adopted a cat named Miso."),
                    ("Dan", "Cats are great."),
                ],
            ),
            "session_2_date_time": "2:00 pm on 9 June, 2023",
            "session_2": _turns(
                2,
                [
                    ("Cleo", "I moved to Paris last week."),
                    ("Dan", "Big change!"),
                    ("Cleo", "Miso loves the new balcony."),
                    ("Dan", "I started playing the violin."),
                ],
            ),
        },
        "qa": [
            {"question": "Where does Cleo live?", "answer": "Rome", "evidence": ["D1:1"], "category": 4},
            {"question": "What is Cleo's cat called?", "answer": "Miso", "evidence": ["D1:4"], "category": 4},
            {"question": "What did Dan start?", "answer": "violin", "evidence": ["D2:4"], "category": 4},
            {"question": "What did Cleo adopt?", "adversarial_answer": "a dog", "evidence": [], "category": 5},
            {"question": "When did Cleo move?", "answer": "June 2023", "evidence": ["D2:1"], "category": 2},
        ],
    }
    return [first, second]


ERRATA = [
    {
        "question_id": "locomo_1_qa0",
        "question": "Where does Cleo live?",
        "golden_answer": "Rome",
        "category": 4,
        "error_type": "TEMPORAL_ERROR",
        "cited_evidence": ["D1:1"],
        "correct_evidence": ["D2:1"],
        "correct_answer": "Paris",
        "reasoning": "She moved to Paris in session 2.",
    },
    {
        "question_id": "locomo_1_qa1",
        "question": "What is Cleo's cat called?",
        "golden_answer": "Miso",
        "category": 4,
        "error_type": "WRONG_CITATION",
        "cited_evidence": ["D1:4"],
        "correct_evidence": ["D1:3", "D2:3"],
        "correct_answer": "Miso (answer is correct, citation is wrong)",
        "reasoning": "D1:4 is Dan's reply; the cat is named in D1:3.",
    },
]


@pytest.fixture
def files(tmp_path):
    """(data file, errata file) written to tmp_path."""
    data, errata = tmp_path / "locomo_tiny.json", tmp_path / "errata.json"
    data.write_text(json.dumps(_samples()))
    errata.write_text(json.dumps(ERRATA))
    return data, errata


def _write_errata(path, errata):
    path.write_text(json.dumps(errata))
    return path


def test_statuses_and_corrected_fields_land_on_questions(files):
    data, errata = files
    ds = load_dataset(f"{data}?errata={errata}")
    q = {x.id: x for x in ds.questions}
    h = ds.histories["conv-2"]
    assert [(x.id, x.audit) for x in ds.questions] == [
        ("conv-1:q0", "clean"),
        ("conv-2:q0", "temporal_error"),
        ("conv-2:q1", "wrong_citation"),
        ("conv-2:q2", "clean"),
        ("conv-2:q3", "unaudited"),
        ("conv-2:q4", "clean"),
    ]
    wrong = q["conv-2:q0"]
    assert wrong.answer == "Rome" and wrong.audited_answer == "Paris" and wrong.answer_is_wrong
    assert [h[p].id for p in wrong.evidence] == ["D1:1"] and [h[p].id for p in wrong.audited_evidence] == ["D2:1"]
    cited = q["conv-2:q1"]  # the published answer stands, the remark in correct_answer is not an answer
    assert cited.audited_answer == "Miso" and not cited.answer_is_wrong
    assert [h[p].id for p in cited.audited_evidence] == ["D1:3", "D2:3"]
    clean = q["conv-2:q2"]
    assert clean.audited_evidence == clean.evidence and clean.audited_answer == clean.answer
    # the published gold stays: messages are gold for the published evidence only
    assert h[0].gold_for == ("conv-2:q0",) and h[4].gold_for == ("conv-2:q4",)
    # the same errata through load_locomo and a subset: only the kept questions
    only = load_locomo(data, categories=[2], errata=errata)
    assert [(x.id, x.audit) for x in only.questions] == [("conv-2:q4", "clean")]


def test_a_mismatched_question_is_a_load_error_naming_the_file_erratum_and_field(files, tmp_path):
    data, _ = files
    bad = _write_errata(tmp_path / "bad.json", [ERRATA[0], dict(ERRATA[1], question="What is Dan's dog called?")])
    with pytest.raises(LoadError) as e:
        load_dataset(f"{data}?errata={bad}")
    msg = str(e.value)
    assert str(bad) in msg and "erratum locomo_1_qa1 (index 1)" in msg and "field question" in msg
    assert "What is Cleo's cat called?" in msg


@pytest.mark.parametrize(
    "change, field, problem",
    [
        ({"correct_evidence": ["D2:1", "D9:9"]}, "field correct_evidence[1]", "'D9:9' names no turn of conv-2"),
        ({"question_id": "locomo_7_qa0"}, "field question_id", "no such question"),
        ({"question_id": "conv-2:q0"}, "field question_id", "expected 'locomo_<sample>_qa<index>'"),
        ({"error_type": "TYPO"}, "field error_type", "found 'TYPO'"),
        ({"correct_answer": None}, "field correct_answer", "a wrong answer needs it"),
    ],
)
def test_a_bad_erratum_is_an_error(files, tmp_path, change, field, problem):
    data, _ = files
    bad = _write_errata(tmp_path / "bad.json", [dict(ERRATA[0], **change)])
    with pytest.raises(LoadError, match="bad.json") as e:
        load_dataset(f"{data}?errata={bad}")
    assert field in str(e.value) and problem in str(e.value)


def test_a_repeated_erratum_and_errata_on_other_data_are_errors(files, tmp_path):
    data, errata = files
    twice = _write_errata(tmp_path / "twice.json", [ERRATA[0], ERRATA[0]])
    with pytest.raises(LoadError, match="erratum locomo_1_qa0 \\(index 1\\), field question_id: .* appears twice"):
        load_dataset(f"{data}?errata={twice}")
    with pytest.raises(ConfigError, match="errata apply to LoCoMo data only"):
        load_dataset(f"synthetic:messages=60,seed=1?errata={errata}")
    with pytest.raises(ConfigError, match="the one option is errata=PATH"):
        load_dataset(f"{data}?errors={errata}")
    with pytest.raises(FileNotFoundError, match="no LoCoMo errata file"):
        load_dataset(f"{data}?errata={tmp_path / 'none.json'}")


def test_identity_without_errata_is_the_files_and_with_errata_another(files):
    data, errata = files
    plain = load_dataset(str(data))
    assert plain.sha256 == hashlib.sha256(data.read_bytes()).hexdigest()
    assert not plain.errata_sha256 and not plain.errata_source
    assert all(q.audit == "" and q.audited_evidence == () and q.audited_answer == "" for q in plain.questions)
    fixed = load_dataset(f"{data}?errata={errata}")
    errata_sha = hashlib.sha256(errata.read_bytes()).hexdigest()
    assert fixed.errata_sha256 == errata_sha and fixed.errata_source == str(errata)
    assert fixed.sha256 == hashlib.sha256(f"{plain.sha256}+{errata_sha}".encode()).hexdigest() != plain.sha256
    assert fixed.sha256 == errata_sha256(plain.sha256, errata_sha)
    assert [q.id for q in fixed.questions] == [q.id for q in plain.questions]
    assert fixed.subset(fixed.questions[:2]).sha256 == fixed.sha256


def test_audited_measures_against_a_hand_computation(files):
    data, errata = files
    ds = load_dataset(f"{data}?errata={errata}")
    h = ds.histories["conv-2"]
    pos = {m.id: m.pos for m in h}
    records = [
        {  # conv-2:q0: the memory holds D1:1 (published gold) and D2:1 (corrected gold)
            "question_id": "conv-2:q0",
            "method": "rag",
            "status": "ok",
            "memory": "Cleo: I live in Rome now.\nCleo: I moved to Paris last week.",
            "pool": {"positions": [pos["D1:1"], pos["D2:1"]]},
            "locomo_f1": 1.0,
        },
        {  # conv-2:q1: windows showed D1:3, D1:4, D2:3; KEEP D1:4 only
            "question_id": "conv-2:q1",
            "method": "extractive",
            "status": "ok",
            "memory": "Dan: Cats are great.",
            "windows": [{"positions": [pos["D1:3"], pos["D1:4"]]}, {"positions": [pos["D2:3"]]}],
            "decisions": [
                {"pos": pos["D1:3"], "op": "DROP"},
                {"pos": pos["D1:4"], "op": "KEEP", "content": "Cats are great."},
                {"pos": pos["D2:3"], "op": "DROP"},
            ],
            "construction": {
                **{"n_windows": 2, "n_valid": 2, "n_fmt": 2, "n_messages": 3, "n_decided": 3, "n_kept": 1},
                **{"n_gold": 1, "n_gold_kept": 1, "failures": {}},
            },
            "locomo_f1": 0.0,
        },
        {  # conv-2:q2, clean: memory holds its gold and its answer
            "question_id": "conv-2:q2",
            "method": "rag",
            "status": "ok",
            "memory": "Dan: I started playing the violin.",
            "pool": {"positions": [pos["D2:4"]]},
            "locomo_f1": 0.5,
        },
        {"question_id": "conv-2:q3", "method": "rag", "status": "ok", "memory": "", "pool": {"positions": []}},
    ]
    a = audited_summary(records, ds)
    # by hand: q0 published recall 1/1, audited 1/1; q1 published {D1:4} kept 1/1, audited {D1:3, D2:3} 0/2;
    # q2 1/1 both ways. Answer recall: q0 "Rome" 1 / "Paris" 1; q1 "Miso" 0 both; q2 "violin" 1 both.
    assert a["questions"] == 3 and a["ok"] == 3  # category 5 is left out
    assert (a["flagged"], a["wrong_citation"], a["wrong_answer"]) == (2, 1, 1)
    assert a["by_audit"] == {"clean": 1, "temporal_error": 1, "wrong_citation": 1}
    assert a["evidence_recall"]["published"] == {"mean": 1.0, "n": 3}
    assert a["evidence_recall"]["audited"] == {"mean": pytest.approx((1 + 0 + 1) / 3), "n": 3}
    assert a["answer_recall_in_memory"]["published"]["mean"] == pytest.approx(2 / 3)
    assert a["answer_recall_in_memory"]["audited"]["mean"] == pytest.approx(2 / 3)
    assert a["gold_keep_recall"]["published"] == {"mean": 1.0, "n_gold_shown": 1, "n_gold_kept": 1}
    assert a["gold_keep_recall"]["audited"] == {"mean": 0.0, "n_gold_shown": 2, "n_gold_kept": 0}
    assert a["locomo_f1"]["all"] == {"mean": pytest.approx(0.5), "n": 3}
    assert a["locomo_f1"]["clean"] == {"mean": 0.5, "n": 1}
    assert a["locomo_f1"]["answer_right"] == {"mean": pytest.approx(0.25), "n": 2}
    assert a["accuracy"] is None
    assert a["ceiling"] == {"overall": pytest.approx(2 / 3), "by_category": {"single-hop": pytest.approx(2 / 3)}}
    row = table_row({"audited": a, "counts": {"ok": 4}})
    assert row["flagged"] == 2 and row["evidence_recall_audited"] == pytest.approx(2 / 3)
    assert row["gold_keep_recall_audited"] == 0.0 and row["ceiling"] == pytest.approx(2 / 3)
    assert "flagged" not in table_row({"counts": {"ok": 4}})  # runs without errata keep their columns
    assert audited_summary(records, load_dataset(str(data))) is None


@pytest.fixture
def locomo_run(files, tmp_path, capsys):
    """A real rag run with the fake backend on the hand-made LoCoMo file (no errata)."""
    from lazymem.cli import main as cli_main

    data, _ = files
    pipeline = {
        "method": "rag",
        "retrieval": {"dense_model": None, "n": 3},
        "window": {"w": 1},
        "mpm": FAKE,
        "answer": FAKE,
    }
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump({"dataset": str(data), "judge": "none", "pipeline": pipeline}))
    run = tmp_path / "rag"
    assert cli_main(["eval", str(base), "--out", str(run), "--no-progress"]) == 0
    capsys.readouterr()
    return run, base


def test_remeasure_with_errata_adds_the_audited_block_from_the_records(files, locomo_run, capsys):
    from lazymem.cli import main as cli_main
    from lazymem.eval.report import build_report, report_markdown

    data, errata = files
    run, _ = locomo_run
    summary = json.loads((run / "summary.json").read_text())
    assert "audited" not in summary
    records = (run / "records.jsonl").read_bytes()
    assert cli_main(["remeasure", str(run), "--errata", str(errata)]) == 0
    assert "audited 5 questions" in capsys.readouterr().out
    after = json.loads((run / "summary.json").read_text())
    assert (run / "records.jsonl").read_bytes() == records  # the records do not change
    assert {k: v for k, v in after.items() if k != "audited"} == summary
    a = after["audited"]
    assert a["questions"] == 5 and a["flagged"] == 2 and a["errata"]["sha256"] == errata_sha256_of(errata)
    expected = audited_summary(
        [json.loads(x) for x in records.decode().splitlines()], load_dataset(f"{data}?errata={errata}")
    )
    assert a == expected
    assert a["ceiling"]["overall"] == pytest.approx(4 / 5)
    report = report_markdown(build_report([run], n_resamples=10))
    assert "## Audited LoCoMo" in report and "| rag |" in report


def errata_sha256_of(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_run_with_errata_in_its_spec_has_another_identity_and_the_audited_block(files, locomo_run, capsys):
    from lazymem.cli import main as cli_main

    data, errata = files
    plain_run, base = locomo_run
    recipe = yaml.safe_load(base.read_text())
    recipe["dataset"] = f"{data}?errata={errata}"
    base.write_text(yaml.safe_dump(recipe))
    run = base.parent / "rag_errata"
    assert cli_main(["eval", str(base), "--out", str(run), "--no-progress"]) == 0
    capsys.readouterr()
    manifest = json.loads((run / "manifest.json").read_text())
    plain = json.loads((plain_run / "manifest.json").read_text())
    assert manifest["dataset"]["sha256"] != plain["dataset"]["sha256"]
    assert manifest["dataset"]["errata"] == {"source": str(errata), "sha256": errata_sha256_of(errata)}
    assert "errata" not in plain["dataset"]
    assert json.loads((run / "summary.json").read_text())["audited"]["flagged"] == 2


def test_the_real_errata_file(shared_data):
    errata = shared_data / "locomo" / "locomo10_audit_errata.json"
    if not errata.is_file():
        pytest.skip(f"no LoCoMo errata at {errata} (see DATA.md)")
    items = json.loads(errata.read_text())
    assert len(items) == 156
    with pytest.warns(UserWarning, match="dropped 3 evidence ids"):
        ds = load_locomo(shared_data / "locomo" / "locomo10.json", errata=errata)
    audits = Counter(q.audit for q in ds.questions)
    assert audits == {
        "clean": 1384,
        "unaudited": 446,
        "wrong_citation": 57,
        "hallucination": 33,
        "temporal_error": 26,
        "attribution_error": 24,
        "ambiguous": 13,
        "incomplete": 3,
    }
    paper = load_dataset(f"{shared_data / 'locomo' / 'locomo10.json'}#paper?errata={errata}")
    by = {
        conv: (
            sum(q.audit != "clean" for q in paper.questions if q.history_id == conv),
            sum(q.answer_is_wrong for q in paper.questions if q.history_id == conv),
        )
        for conv in ("conv-49", "conv-50")
    }
    assert by == {"conv-49": (16, 14), "conv-50": (17, 12)}
    # every erratum's id names its question: locomo_<sample index>_qa<j> is "<sample_id>:q<j>"
    samples = json.loads((shared_data / "locomo" / "locomo10.json").read_text())
    flagged = {q.id for q in ds.questions if q.audit not in ("clean", "unaudited")}
    ids = set()
    for e in items:
        sample, qa = e["question_id"].removeprefix("locomo_").split("_qa")
        ids.add(f"{samples[int(sample)]['sample_id']}:q{qa}")
    assert ids == flagged
