"""Tests for lazymem.data.locomo: counts on the real file, evidence repairs, bad input."""

from __future__ import annotations

import doctest
import json
import re
import warnings
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazymem.data.locomo as locomo
from lazymem.data import load_locomo, repair_evidence_id
from lazymem.errors import LoadError


def test_doctests():
    assert doctest.testmod(locomo).failed == 0


@pytest.fixture(scope="module")
def path(shared_data):
    return shared_data / "locomo" / "locomo10.json"


@pytest.fixture(scope="module")
def full(path):
    with pytest.warns(UserWarning, match="dropped 3 evidence ids") as record:
        ds = load_locomo(path)
    # one warning for all drops (other libraries may warn too in a fresh environment)
    assert sum("evidence ids" in str(w.message) for w in record) == 1
    return ds


@pytest.fixture(scope="module")
def raw(path):
    return {s["sample_id"]: s for s in json.loads(path.read_text())}


def test_full_file_counts(full):
    assert full.name == "locomo10"
    assert full.sha256 == "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
    assert len(full.questions) == 1986 and len(full.histories) == 10 and full.n_messages == 5882
    assert Counter(q.category for q in full.questions) == {1: 282, 2: 321, 3: 96, 4: 841, 5: 446}
    assert Counter(q.type for q in full.questions)["adversarial"] == 446


def test_paper_subset(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # conv-49/50 have repairs only: nothing is dropped, no warning
        ds = load_locomo(path, subset="paper")
    assert ds.name == "locomo10-paper" and list(ds.histories) == ["conv-49", "conv-50"]
    assert len(ds.questions) == 314
    assert Counter(q.history_id for q in ds.questions) == {"conv-49": 156, "conv-50": 158}
    by = Counter((q.history_id, q.category) for q in ds.questions)
    assert {c: by["conv-49", c] for c in (1, 2, 3, 4)} == {1: 37, 2: 33, 3: 13, 4: 73}
    assert {c: by["conv-50", c] for c in (1, 2, 3, 4)} == {1: 32, 2: 32, 3: 7, 4: 87}
    assert [i.action.split(":")[0] for i in ds.issues] == ["repaired"] * 4


def test_evidence_hand_checked(full):
    q = full.question("conv-26:q0")
    assert (q.text, q.answer, q.type, q.category) == (
        "When did Caroline go to the LGBTQ support group?",
        "7 May 2023",
        "temporal",
        2,
    )
    h = full.history(q)
    assert q.evidence == (2,)
    assert h[2].id == "D1:3" and h[2].role == "Caroline" and h[2].session_id == "session_1" and h[2].turn == 2
    assert h[2].text == "I went to a LGBTQ support group yesterday and it was so powerful."
    assert h[2].timestamp == "1:56 pm on 8 May, 2023" and h[2].time.isoformat() == "2023-05-08T13:56:00"
    assert h[2].is_gold_for("conv-26:q0")
    assert h.speakers == ("Caroline", "Melanie")
    assert q.query_time == "9:55 am on 22 October, 2023"  # session_19, the last one
    # 'D8:6; D9:17' (two ids in one string) -> both turns
    q37 = full.question("conv-26:q37")
    assert [h[p].id for p in q37.evidence] == ["D8:6", "D9:17"]


def test_sessions_in_numeric_order(full):
    h = full.histories["conv-26"]
    assert h.session_ids == tuple(f"session_{n}" for n in range(1, 20))
    first_10 = next(m for m in h if m.session_id == "session_10")
    last_9 = [m for m in h if m.session_id == "session_9"][-1]
    assert first_10.pos == last_9.pos + 1 and first_10.id == "D10:1"
    assert all(m.pos == i for i, m in enumerate(h))


def test_repairs_and_drops_are_recorded(full):
    got = {(i.record, i.field, i.action) for i in full.issues if i.field.startswith("qa[")}
    assert got == {
        ("sample conv-26 (index 0)", "qa[37].evidence[0]", "repaired: 'D8:6; D9:17' -> ['D8:6', 'D9:17']"),
        ("sample conv-42 (index 3)", "qa[58].evidence[6]", "dropped"),
        ("sample conv-42 (index 3)", "qa[88].evidence[1]", "dropped"),
        ("sample conv-43 (index 4)", "qa[18].evidence[4]", "repaired: 'D:11:26' -> ['D11:26']"),
        ("sample conv-47 (index 6)", "qa[38].evidence[0]", "dropped"),
        ("sample conv-49 (index 8)", "qa[31].evidence[0]", "repaired: 'D9:1 D4:4 D4:6' -> ['D9:1', 'D4:4', 'D4:6']"),
        (
            "sample conv-49 (index 8)",
            "qa[38].evidence[0]",
            "repaired: 'D22:1 D22:2 D9:10 D9:11' -> ['D22:1', 'D22:2', 'D9:10', 'D9:11']",
        ),
        (
            "sample conv-49 (index 8)",
            "qa[46].evidence[0]",
            "repaired: 'D21:18 D21:22 D11:15 D11:19' -> ['D21:18', 'D21:22', 'D11:15', 'D11:19']",
        ),
        ("sample conv-50 (index 9)", "qa[69].evidence[0]", "repaired: 'D30:05' -> ['D30:5']"),
    }
    orphans = [i for i in full.issues if i.field == "conversation"]
    assert len(orphans) == 1 and "16 date_time keys" in orphans[0].problem and orphans[0].action == "ignored"


def test_bad_evidence_error_names_record_and_field(path):
    with pytest.raises(LoadError) as e:
        load_locomo(path, bad_evidence="error")
    msg = str(e.value)
    assert "locomo10.json" in msg and "sample conv-42 (index 3)" in msg and "qa[58].evidence[6]" in msg
    assert "'D10:19' points to no turn" in msg


def test_everything_matches_raw(full, raw):
    for sid, h in full.histories.items():
        conv = raw[sid]["conversation"]
        n = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
        turns = [t for i in n for t in conv[f"session_{i}"]]
        assert [m.id for m in h] == [t["dia_id"] for t in turns]
        assert [m.role for m in h] == [t["speaker"] for t in turns]
        assert [m.text.split(" [shares ")[0] for m in h] == [t["text"] for t in turns]
        ids = {t["dia_id"] for t in turns}
        for j, item in enumerate(raw[sid]["qa"]):
            q = full.question(f"{sid}:q{j}")
            want = {i for ref in item["evidence"] for i in (repair_evidence_id(ref) or []) if i in ids}
            assert {h[p].id for p in q.evidence} == want
            assert q.answer == str(item.get("answer", ""))
            assert q.adversarial_answer == item.get("adversarial_answer", "")


def test_answers_and_captions(full, path):
    assert full.question("conv-26:q1").answer == "2022"  # a JSON number in the file
    adv = [q for q in full.questions if q.category == 5]
    assert sum(q.answer == "" for q in adv) == 444 and all(q.adversarial_answer for q in adv)
    both = full.question("conv-26:q167")  # category 5 that also carries an answer in the file
    assert (both.answer, both.adversarial_answer) == ("No", "Yes")
    photo = full.histories["conv-26"][4]
    assert photo.id == "D1:5"
    assert photo.text == (
        "The transgender stories were so inspiring! I was so happy and thankful for all the "
        "support. [shares a photo of a dog walking past a wall with a painting of a woman]"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = load_locomo(path, subset="paper", captions=False)
    assert not any("[shares" in m.text for h in plain.histories.values() for m in h)


def test_subset_and_category_arguments(path):
    with pytest.raises(ValueError, match="'paper'"):
        load_locomo(path, subset="test")
    with pytest.raises(ValueError, match="unknown LoCoMo categories"):
        load_locomo(path, categories=[6])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(load_locomo(path, categories=[5]).questions) == 446
        assert len(load_locomo(path, subset="paper", categories=[2]).questions) == 65


# --- bad input ------------------------------------------------------------------------------


def _sample():
    return {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I got a puppy."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice!"},
            ],
            "session_2_date_time": "2:00 pm on 9 May, 2023",
            "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "How is the puppy?"}],
        },
        "qa": [{"question": "What did Ann get?", "answer": "a puppy", "evidence": ["D1:1"], "category": 4}],
    }


@pytest.mark.parametrize(
    "mutate, field, problem",
    [
        (lambda s: s.pop("conversation"), "field conversation", "missing"),
        (lambda s: s["conversation"].pop("session_2_date_time"), "field conversation.session_2_date_time", "missing"),
        (lambda s: s["conversation"]["session_1"][1].pop("text"), "field conversation.session_1[1].text", "missing"),
        (
            lambda s: s["conversation"]["session_1"][0].update(dia_id="D1:2"),
            "field conversation.session_1[1].dia_id",
            "duplicate",
        ),
        (lambda s: s["qa"][0].update(category="4"), "field qa[0].category", "found '4'"),
        (lambda s: s["qa"][0].pop("answer"), "field qa[0].answer", "missing"),
        (lambda s: s["qa"][0].update(evidence="D1:1"), "field qa[0].evidence", "expected a list"),
        (lambda s: s["qa"][0].update(category=5), "field qa[0].adversarial_answer", "category 5"),
    ],
)
def test_bad_samples_name_file_record_and_field(tmp_path, mutate, field, problem):
    bad = _sample()
    mutate(bad)
    good = _sample() | {"sample_id": "conv-0"}
    path = tmp_path / "broken.json"
    path.write_text(json.dumps([good, bad]))
    with pytest.raises(LoadError) as e:
        load_locomo(path)
    msg = str(e.value)
    assert "broken.json" in msg and f"sample conv-1 (index 1), {field}" in msg and problem in msg


def test_truncated_and_wrong_top_level(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text(json.dumps([_sample()])[:100])
    with pytest.raises(LoadError, match=r"cut.json: not valid JSON .* line 1 column \d+"):
        load_locomo(path)
    path.write_text(json.dumps(_sample()))
    with pytest.raises(LoadError, match="cut.json: expected a list of LoCoMo samples"):
        load_locomo(path)


def test_small_file_round_trip(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([_sample()]))
    ds = load_locomo(path)
    q = ds.questions[0]
    assert q.id == "conv-1:q0" and q.evidence == (0,) and q.query_time == "2:00 pm on 9 May, 2023"
    assert [m.id for m in ds.histories["conv-1"]] == ["D1:1", "D1:2", "D2:1"] and ds.issues == ()


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 40), st.integers(1, 60), st.integers(0, 2), st.booleans()), min_size=1, max_size=4
    ),
    st.sampled_from(["; ", " ", ",", ";"]),
)
def test_repair_evidence_id_normalises_format_quirks(ids, sep):
    raw = sep.join(f"D{':' if colon else ''}{s}:{str(t).zfill(len(str(t)) + zeros)}" for s, t, zeros, colon in ids)
    assert repair_evidence_id(raw) == [f"D{s}:{t}" for s, t, _, _ in ids]


def test_porter_stems_persist_so_a_warm_rerun_never_imports_nltk(tmp_path, monkeypatch):
    from lazymem import answers as f1  # the stemming lives in the ground module lazymem.answers

    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path))
    first = f1._StemMemo()
    assert [first.stem(w) for w in ("running", "went", "hikes")] == ["run", "went", "hike"]
    first.save()
    assert first.path().parent == tmp_path / "stems" and first.path().name.startswith("porter-nltk")

    def no_nltk():
        raise AssertionError("NLTK was loaded for a stem already on disk")

    monkeypatch.setattr(f1, "_stemmer", no_nltk)
    again = f1._StemMemo()  # a new process: only the file
    assert [again.stem(w) for w in ("running", "went", "hikes")] == ["run", "went", "hike"]
    with pytest.raises(AssertionError, match="NLTK was loaded"):
        again.stem("swimming")  # a new word still goes to NLTK
    # a damaged file is a cold cache, not an error
    first.path().write_text("{not json")
    monkeypatch.undo()
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path))
    assert f1._StemMemo().stem("running") == "run"
