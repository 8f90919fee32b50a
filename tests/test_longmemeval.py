"""Tests for lazymem.data.longmemeval: the shared samples, bad input, shared haystacks."""

from __future__ import annotations

import copy
import doctest
import json
import time
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazymem.data.longmemeval as lme
from lazymem.data import load_longmemeval, parse_records, parse_time
from lazymem.errors import LoadError


def test_doctests():
    assert doctest.testmod(lme).failed == 0


@pytest.fixture(scope="module")
def oracle(shared_data):
    return load_longmemeval(shared_data / "longmemeval" / "oracle_sample_2q.json")


@pytest.fixture(scope="module")
def fragment(shared_data):
    with pytest.warns(UserWarning) as record:
        ds = load_longmemeval(shared_data / "longmemeval" / "s_fragment_3haystacks.json")
    return ds, [str(w.message) for w in record]


def _record(qid="q1", sessions=None, **over):
    """A small valid official record; `over` replaces fields."""
    sessions = (
        sessions
        if sessions is not None
        else [
            [
                {"role": "user", "content": "I adopted a cat named Miso.", "has_answer": True},
                {"role": "assistant", "content": "Lovely name!"},
            ],
            [{"role": "user", "content": "What's the weather?"}, {"role": "assistant", "content": "Sunny."}],
        ]
    )
    rec = {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": "What is my cat called?",
        "answer": "Miso",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": [f"s{k}" for k in range(len(sessions))],
        "haystack_dates": ["2023/05/20 (Sat) 02:21"] * len(sessions),
        "haystack_sessions": sessions,
        "answer_session_ids": ["s0"],
    }
    rec.update(over)
    return rec


def _expected_evidence(raw: dict, answer_sids) -> list[int]:
    """Independent reference: flatten the raw sessions and pick has_answer turns in the answer sessions."""
    flat = [
        (sid, turn) for sid, session in zip(raw["haystack_session_ids"], raw["haystack_sessions"]) for turn in session
    ]
    return [pos for pos, (sid, turn) in enumerate(flat) if turn.get("has_answer") and sid in answer_sids]


# --- the shared samples --------------------------------------------------------------------


def test_oracle_sample_counts_and_hand_checked_evidence(oracle, shared_data):
    path = shared_data / "longmemeval" / "oracle_sample_2q.json"
    assert oracle.name == "oracle_sample_2q" and oracle.source == str(path)
    assert oracle.sha256 == "8a977cc188314da6e74a49c76b4539006296ea7f28da95005e9d294624e8316b"
    assert [q.id for q in oracle.questions] == ["6a1eabeb", "gpt4_70e84552_abs"]
    assert len(oracle.histories) == 2 and oracle.n_messages == 48 and oracle.issues == ()
    ku = oracle.question("6a1eabeb")
    h = oracle.history(ku)
    assert (ku.type, ku.abbrev, ku.abstention) == ("knowledge-update", "KU", False)
    assert ku.answer == "25 minutes and 50 seconds (or 25:50)"
    assert ku.query_time == "2023/06/01 (Thu) 00:58"
    assert h.session_ids == ("answer_a25d4a91_1", "answer_a25d4a91_2") and len(h) == 24
    # Read off the raw JSON: turn 4 of the first session and turn 0 of the second carry has_answer.
    assert ku.evidence == (4, 12)
    assert h[4].id == "answer_a25d4a91_1#4" and h[4].role == "user"
    assert h[4].text.startswith("That's really helpful, thanks! I've been doing some running lately")
    assert h[12].id == "answer_a25d4a91_2#0"
    assert h[12].text.startswith("I'm training for another charity 5K run coming up")
    assert h[12].timestamp == "2023/05/27 (Sat) 10:20" and h[12].time.isoformat() == "2023-05-27T10:20:00"
    assert h[4].gold_for == ("6a1eabeb",) and not h[5].is_gold
    abs_q = oracle.question("gpt4_70e84552_abs")
    assert abs_q.abstention and abs_q.type == "temporal-reasoning" and abs_q.evidence == (0,)


def test_fragment_uses_item_0_and_drops_the_mismatched_record(fragment):
    ds, warned = fragment
    assert any("list form" in w and "item 0" in w for w in warned)
    assert any("dropped 1 records" in w for w in warned)
    # Record 2 (6a1eabeb): item 0 asks about a sharegpt session while the has_answer flags mark
    # the 5K-run sessions of the real question, which the lists do not contain.
    assert [q.id for q in ds.questions] == ["852ce960", "ba358f49"]
    assert {h: len(v) for h, v in ds.histories.items()} == {"852ce960": 396, "ba358f49": 409}
    assert [len(h.session_ids) for h in ds.histories.values()] == [39, 41]
    actions = [(i.record, i.action) for i in ds.issues]
    assert ("record 0 (question_id '852ce960')", "used item 0 of 9 (third-party list form)") in actions
    assert ("record 1 (question_id 'ba358f49')", "used item 0 of 9 (third-party list form)") in actions
    assert ("record 2 (question_id '6a1eabeb')", "used item 0 of 8 (third-party list form)") in actions
    assert ("record 2 (question_id '6a1eabeb')", "dropped") in actions
    q = ds.question("852ce960")
    assert q.text == "What was the amount I was pre-approved for when I got my mortgage from Wells Fargo?"
    assert (q.answer, q.type) == ("$350,000", "knowledge-update")
    assert q.evidence_sessions == ("answer_3a6f1e82_1", "answer_3a6f1e82_2")
    h = ds.history(q)
    assert q.evidence == (26, 364)  # session 2 (after two 12-turn sessions) turn 2; session 36 turn 0
    assert h[26].id == "answer_3a6f1e82_1#2" and "pre-approved for $350," in h[26].text
    assert h[364].id == "answer_3a6f1e82_2#0" and h[364].text.startswith("I'm planning to move into my new home soon")
    q2 = ds.question("ba358f49")
    assert q2.answer == "33" and q2.evidence == (59, 269)
    assert ds.history(q2)[269].text.startswith("I'm 32, so I'm in my 30s.")


def test_fragment_strict_mode_rejects_the_mismatched_record(shared_data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(LoadError) as e:
            load_longmemeval(shared_data / "longmemeval" / "s_fragment_3haystacks.json", bad_evidence="error")
    msg = str(e.value)
    assert "s_fragment_3haystacks.json" in msg and "record 2 (question_id '6a1eabeb')" in msg
    assert "answer_session_ids[0]" in msg and "has_answer" in msg


@pytest.mark.parametrize("name", ["oracle_sample_2q.json", "s_fragment_3haystacks.json"])
def test_samples_match_a_recomputation_from_raw(shared_data, name):
    path = shared_data / "longmemeval" / name
    raw = {r["question_id"]: r for r in json.loads(path.read_text())}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = load_longmemeval(path)
    for q in ds.questions:
        r, h = raw[q.id], ds.history(q)
        sids = r["answer_session_ids"][0] if "questions" in r else r["answer_session_ids"]
        assert list(q.evidence) == _expected_evidence(r, sids)
        flat = [turn for session in r["haystack_sessions"] for turn in session]
        assert [m.text for m in h] == [t["content"] for t in flat]
        assert [m.role for m in h] == [t["role"] for t in flat]
        assert all(m.pos == i for i, m in enumerate(h))
        assert all(h[p].is_gold_for(q.id) for p in q.evidence)
        assert sum(m.is_gold_for(q.id) for m in h) == len(q.evidence)


def test_reformatted_sample_is_rejected(shared_data):
    with pytest.raises(LoadError) as e:
        load_longmemeval(shared_data / "longmemeval" / "oracle_sample16_reformatted.json")
    msg = str(e.value)
    assert "oracle_sample16_reformatted.json" in msg and "not the official LongMemEval schema" in msg
    assert "'data'" in msg and "conversation" in msg


# --- bad input ------------------------------------------------------------------------------


def _write(tmp_path, records, name="bad.json"):
    path = tmp_path / name
    path.write_text(json.dumps(records))
    return path


def test_truncated_json_names_file_and_position(tmp_path, shared_data):
    text = (shared_data / "longmemeval" / "oracle_sample_2q.json").read_text()
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2])
    with pytest.raises(LoadError) as e:
        load_longmemeval(path)
    msg = str(e.value)
    assert "cut.json" in msg and "not valid JSON" in msg and "line" in msg and "column" in msg


@pytest.mark.parametrize(
    "mutate, record, field, problem",
    [
        (lambda r: r.pop("haystack_dates"), "record 1 (question_id 'q1')", "field haystack_dates", "missing"),
        (
            lambda r: r["haystack_sessions"][1][1].update(content=7),
            "record 1 (question_id 'q1')",
            "field haystack_sessions[1][1].content",
            "expected a string, found a number",
        ),
        (
            lambda r: r["haystack_sessions"][0][1].pop("role"),
            "record 1 (question_id 'q1')",
            "field haystack_sessions[0][1].role",
            "missing",
        ),
        (
            lambda r: r["haystack_sessions"][0][0].update(role="system"),
            "record 1 (question_id 'q1')",
            "field haystack_sessions[0][0].role",
            "'system'",
        ),
        (
            lambda r: r["haystack_sessions"][0][0].update(has_answer="yes"),
            "record 1 (question_id 'q1')",
            "field haystack_sessions[0][0].has_answer",
            "true/false",
        ),
        (
            lambda r: r.update(answer_session_ids=["s9"]),
            "record 1 (question_id 'q1')",
            "field answer_session_ids[0]",
            "'s9' is not in haystack_session_ids",
        ),
        (
            lambda r: r["haystack_dates"].pop(),
            "record 1 (question_id 'q1')",
            "field haystack_session_ids/haystack_dates/haystack_sessions",
            "lengths differ",
        ),
        (
            lambda r: r.update(question_type="single-hop"),
            "record 1 (question_id 'q1')",
            "field question_type",
            "unknown question_type",
        ),
        (lambda r: r.update(question_id="q0"), "record 1 (question_id 'q0')", "field question_id", "duplicate"),
        (
            lambda r: r.update(haystack_sessions="none"),
            "record 1 (question_id 'q1')",
            "field haystack_sessions",
            "expected a list",
        ),
        (lambda r: r.update(answer=None), "record 1 (question_id 'q1')", "field answer", "string or number"),
        (lambda r: r.pop("question_id"), "record 1", "field question_id", "missing"),
    ],
)
def test_bad_records_name_file_record_and_field(tmp_path, mutate, record, field, problem):
    bad = _record("q1")
    mutate(bad)
    path = _write(tmp_path, [_record("q0"), bad])
    with pytest.raises(LoadError) as e:
        load_longmemeval(path)
    msg = str(e.value)
    assert "bad.json" in msg and f"{record}, {field}" in msg and problem in msg
    assert e.value.field == field.removeprefix("field ")


def test_top_level_must_be_a_list(tmp_path):
    with pytest.raises(LoadError, match="bad.json: not the official LongMemEval schema.*found an object"):
        load_longmemeval(_write(tmp_path, {"question_id": "x"}))


def test_numeric_answer_becomes_text_and_int_abstention():
    ds = parse_records([_record("q1_abs", answer=3)], "mem.json", "t")
    assert ds.questions[0].answer == "3" and ds.questions[0].abstention


def test_unknown_name_and_offline_hub(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="longmemeval_s_cleaned"):
        load_longmemeval("longmemeval_x")
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ConnectionError, match="cannot reach the Hugging Face hub.*local path"):
        load_longmemeval("longmemeval_oracle_cleaned", cache_dir=tmp_path / "hub")


@pytest.mark.network
def test_download_oracle_cleaned():
    ds = load_longmemeval("longmemeval_oracle_cleaned")
    assert len(ds.questions) == 500 and ds.name == "longmemeval_oracle_cleaned"


# --- shared haystacks ---------------------------------------------------------------------


def test_identical_haystacks_share_one_history_and_merge_gold():
    first = _record("q1")
    second = _record(
        "q2",
        sessions=copy.deepcopy(first["haystack_sessions"]),
        question="What's the weather?",
        answer_session_ids=["s1"],
    )
    second["haystack_sessions"][0][0].pop("has_answer")
    second["haystack_sessions"][1][1]["has_answer"] = True  # flags differ per question, contents do not
    other = _record("q3")
    other["haystack_sessions"][1][1]["content"] = "Rainy."
    ds = parse_records([first, second, other], "mem.json", "t")
    assert sorted(ds.histories) == ["q1", "q3"]
    assert [q.history_id for q in ds.questions] == ["q1", "q1", "q3"]
    h = ds.histories["q1"]
    assert ds.question("q1").evidence == (0,) and ds.question("q2").evidence == (3,)
    assert h[0].gold_for == ("q1",) and h[3].gold_for == ("q2",) and h[1].gold_for == ()
    assert ds.histories["q3"][0].gold_for == ("q3",)


def test_same_list_object_fast_path_100k_messages():
    n_sessions, turns = 10_000, 10
    sessions = [
        [
            {"role": ("user", "assistant")[t % 2], "content": f"session {k} turn {t} about topic {k % 97}"}
            for t in range(turns)
        ]
        for k in range(n_sessions)
    ]
    for k in range(0, n_sessions, 100):
        sessions[k][1]["has_answer"] = True
    sids = [f"s{k}" for k in range(n_sessions)]
    dates = [f"2023/05/{1 + k % 28:02d} (Sat) 02:21" for k in range(n_sessions)]
    records = [
        _record(
            f"q{j}",
            sessions=sessions,
            haystack_session_ids=sids,
            haystack_dates=dates,
            question_type="multi-session",
            answer_session_ids=[f"s{j * 100}", f"s{j * 100 + 50}"],
        )
        for j in range(100)
    ]
    start = time.perf_counter()
    ds = parse_records(records, "synthetic", "synthetic")
    elapsed = time.perf_counter() - start
    assert elapsed < 10  # ~1.2 s measured on a loaded 2-core box; this guards against quadratic work
    assert list(ds.histories) == ["q0"] and ds.n_messages == 100_000
    assert ds.question("q7").evidence == (7 * 100 * turns + 1,)
    assert ds.histories["q0"][7001].gold_for == ("q7",)
    assert ds.issues == ()  # flags of other questions in a shared list are expected, not issues


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.lists(st.tuples(st.booleans(), st.text(max_size=5)), min_size=1, max_size=4), min_size=1, max_size=5),
    st.data(),
)
def test_evidence_is_flagged_turns_of_answer_sessions(shape, data):
    sessions = [
        [
            {"role": ("user", "assistant")[t % 2], "content": text, "has_answer": flag}
            for t, (flag, text) in enumerate(session)
        ]
        for session in shape
    ]
    answer = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True))
    rec = _record("q1", sessions=sessions, answer_session_ids=[f"s{k}" for k in answer])
    ds = parse_records([rec], "mem.json", "t")
    h, q = ds.histories["q1"], ds.questions[0]
    assert list(q.evidence) == _expected_evidence(rec, {f"s{k}" for k in answer})
    assert [m.pos for m in h] == list(range(len(h)))
    assert [m.id for m in h] == [f"s{k}#{t}" for k, s in enumerate(shape) for t in range(len(s))]
    assert {m.pos for m in h if m.is_gold} == set(q.evidence)


def test_parse_time():
    assert parse_time("2023/05/20 (Sat) 02:21").hour == 2 and parse_time("") is None
