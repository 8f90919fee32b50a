"""The synthetic generator: official LongMemEval schema, planted evidence, determinism, loader round trip."""

from __future__ import annotations

import doctest
import hashlib
import importlib
import json
import os
import pkgutil
import re
import subprocess
import sys
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazymem.data import (
    canonical_json_chunks,
    generate_records,
    generate_with_facts,
    parse_records,
    parse_spec,
    records_sha256,
    spec_string,
    synthetic,
    synthetic_dataset,
    write_synthetic,
)
from lazymem.errors import ConfigError
from lazymem.records import LONGMEMEVAL_TYPES

PROPS = settings(max_examples=25, deadline=None)
SIZES = st.integers(50, 2000)
SEEDS = st.integers(0, 10**6)
KEYS = {
    "question_id",
    "question_type",
    "question",
    "answer",
    "question_date",
    "haystack_session_ids",
    "haystack_dates",
    "haystack_sessions",
    "answer_session_ids",
}
NOT_ENOUGH = "The information provided is not enough."


def _time(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y/%m/%d (%a) %H:%M")  # also checks the weekday is well-formed


def _flagged(rec: dict) -> set[tuple[str, int]]:
    return {
        (sid, t)
        for sid, session in zip(rec["haystack_session_ids"], rec["haystack_sessions"])
        for t, turn in enumerate(session)
        if turn["has_answer"]
    }


def _number(text: str) -> int:
    return int(re.sub(r"[^\d]", "", text))


def test_doctests():
    # synthetic is a package: run the doctests of its __init__ and of every module in it.
    modules = [synthetic] + [
        importlib.import_module(f"{synthetic.__name__}.{info.name}")
        for info in pkgutil.iter_modules(synthetic.__path__)
    ]
    results = [doctest.testmod(m) for m in modules]
    assert sum(r.failed for r in results) == 0 and sum(r.attempted for r in results) > 0


def test_hand_worked_small_history():
    records, facts = generate_with_facts(n_messages=120, seed=5, questions_per_history=12)
    assert [r["question_id"] for r in records][:2] == ["syn5-h0-q0", "syn5-h0-q1"]
    assert records[-1]["question_id"] == "syn5-h0-q11_abs" and records[-1]["answer"].startswith(NOT_ENOUGH)
    assert sum(len(s) for s in records[0]["haystack_sessions"]) == 120
    # Slots cycle through the six official types in a fixed order.
    assert [r["question_type"] for r in records[:6]] == [
        "single-session-user",
        "single-session-assistant",
        "single-session-preference",
        "multi-session",
        "temporal-reasoning",
        "knowledge-update",
    ]


@PROPS
@given(SIZES, SEEDS, st.integers(1, 2))
def test_gold_turns_state_the_fact(n, seed, histories):
    records, facts = generate_with_facts(n, seed, histories, 12)
    assert set(facts) == {r["question_id"] for r in records}
    for rec in records:
        evidence = facts[rec["question_id"]]
        assert evidence, rec["question_id"]
        assert _flagged(rec) == {(e.session_id, e.turn) for e in evidence}
        index = {sid: k for k, sid in enumerate(rec["haystack_session_ids"])}
        for e in evidence:
            turn = rec["haystack_sessions"][index[e.session_id]][e.turn]
            # single-session-assistant evidence is the assistant turn; everything else the user turn
            assert turn["role"] == ("assistant" if rec["question_type"] == "single-session-assistant" else "user")
            for text in e.contains:
                assert text and text in turn["content"], (rec["question_id"], text, turn["content"])


@PROPS
@given(SIZES, SEEDS)
def test_answers_follow_from_the_evidence(n, seed):
    records, facts = generate_with_facts(n, seed, 1, 12)
    for rec in records:
        ev = facts[rec["question_id"]]
        index = {sid: k for k, sid in enumerate(rec["haystack_session_ids"])}
        texts = [rec["haystack_sessions"][index[e.session_id]][e.turn]["content"] for e in ev]
        when = [_time(rec["haystack_dates"][index[e.session_id]]) for e in ev]
        kind, q, a = rec["question_type"], rec["question"], rec["answer"]
        if rec["question_id"].endswith("_abs"):
            assert a.startswith(NOT_ENOUGH)
            continue
        assert not a.startswith(NOT_ENOUGH)
        if kind == "knowledge-update":
            assert len(ev) == 2 and when[0] < when[1] and a in texts[1]
        elif kind == "multi-session":
            assert len({e.session_id for e in ev}) == len(ev) >= 2
            if a.isdigit():  # a count of distinct things
                assert int(a) == len(ev)
            else:  # a total of the amounts stated
                assert _number(a) == sum(_number(e.contains[0]) for e in ev)
        elif kind == "temporal-reasoning":
            if q.startswith("How many days passed"):
                assert _number(a) == (when[1].date() - when[0].date()).days > 0
            elif q.startswith("How many days ago"):
                assert _number(a.split(" ago")[0]) == (_time(rec["question_date"]).date() - when[0].date()).days
            elif q.startswith("Which did I do first"):
                assert when[0].date() < when[1].date()
            else:
                assert q.startswith("When did I") and f"{when[0].day}, {when[0].year}" in a
        elif kind in ("single-session-user", "single-session-assistant"):
            assert len(ev) == 1 and re.sub(r"^an? ", "", a.lower()) in texts[0].lower()


@PROPS
@given(SIZES, SEEDS, st.integers(1, 2), st.sampled_from([6, 12, 13]))
def test_schema_is_official_and_consistent(n, seed, histories, questions):
    records = generate_records(n, seed, histories, questions)
    assert len(records) == histories * questions
    assert len({r["question_id"] for r in records}) == len(records)
    all_sids = set()
    by_history: dict[str, list[dict]] = {}
    for rec in records:
        assert set(rec) == KEYS
        assert rec["question_type"] in LONGMEMEVAL_TYPES
        assert all(isinstance(rec[k], str) and rec[k] for k in ("question_id", "question", "answer", "question_date"))
        assert re.fullmatch(rf"syn{seed}-h\d+-q\d+(_abs)?", rec["question_id"])
        sids, dates, sessions = rec["haystack_session_ids"], rec["haystack_dates"], rec["haystack_sessions"]
        assert len(sids) == len(dates) == len(sessions) == len(set(sids))
        times = [_time(d) for d in dates]
        assert all(a < b for a, b in zip(times, times[1:])) and times[-1] < _time(rec["question_date"])
        assert all(_time(d).strftime("%Y/%m/%d (%a) %H:%M") == d for d in dates)
        for session in sessions:
            assert 6 <= len(session) <= 16 and len(session) % 2 == 0
            for t, turn in enumerate(session):
                assert set(turn) == {"role", "content", "has_answer"}
                assert turn["role"] == ("user", "assistant")[t % 2]
                assert isinstance(turn["content"], str) and turn["content"].strip() == turn["content"] != ""
                assert "{" not in turn["content"] and "}" not in turn["content"]  # no unfilled template slot
                assert turn["has_answer"] in (True, False)
        # answer sessions are exactly the sessions holding this question's evidence, in order
        flagged = [sid for sid, s in zip(sids, sessions) if any(t["has_answer"] for t in s)]
        assert rec["answer_session_ids"] == flagged and set(flagged) <= set(sids)
        by_history.setdefault(rec["question_id"].rsplit("-q", 1)[0], []).append(rec)
    for group in by_history.values():
        first = group[0]
        assert not set(first["haystack_session_ids"]) & all_sids  # session ids unique across histories
        all_sids |= set(first["haystack_session_ids"])
        for rec in group:
            # the sharing contract the loader relies on
            assert rec["haystack_session_ids"] is first["haystack_session_ids"]
            assert rec["haystack_dates"] is first["haystack_dates"]
            assert rec["question_date"] == first["question_date"]
            for k, (mine, theirs) in enumerate(zip(rec["haystack_sessions"], first["haystack_sessions"])):
                evidence = first["haystack_session_ids"][k] in rec["answer_session_ids"]
                assert [t["content"] for t in mine] == [t["content"] for t in theirs]
                if not evidence and first["haystack_session_ids"][k] not in first["answer_session_ids"]:
                    assert mine is theirs
                    assert not any(t["has_answer"] for t in mine)


@PROPS
@given(SIZES, SEEDS, st.integers(1, 3))
def test_message_count_and_types(n, seed, histories):
    records = generate_records(n, seed, histories, 12)
    seen = set()
    for rec in records:
        if id(rec["haystack_sessions"][0]) in seen:
            continue
        seen.add(id(rec["haystack_sessions"][0]))
        assert sum(len(s) for s in rec["haystack_sessions"]) == n - n % 2  # whole user/assistant pairs
    for h in range(histories):
        mine = [r for r in records if r["question_id"].startswith(f"syn{seed}-h{h}-")]
        assert {r["question_type"] for r in mine} == set(LONGMEMEVAL_TYPES)
        assert sum(r["question_id"].endswith("_abs") for r in mine) == 1
        ms = [r for r in mine if r["question_type"] == "multi-session" and not r["question_id"].endswith("_abs")]
        assert all(len(r["answer_session_ids"]) >= 2 for r in ms)


@PROPS
@given(SIZES, SEEDS, st.integers(1, 2))
def test_loader_evidence_points_at_the_fact(n, seed, histories):
    records, facts = generate_with_facts(n, seed, histories, 12)
    ds = parse_records(records, file="synthetic", name="synthetic")
    assert len(ds.histories) == histories and ds.issues == ()
    assert [q.id for q in ds.questions] == [r["question_id"] for r in records]
    assert all(len(h) == n - n % 2 for h in ds.histories.values())
    for q in ds.questions:
        history = ds.history(q)
        expected = {(e.session_id, e.turn): e.contains for e in facts[q.id]}
        got = {(history[p].session_id, history[p].turn) for p in q.evidence}
        assert got == set(expected), q.id
        for p in q.evidence:
            m = history[p]
            assert q.id in m.gold_for
            assert all(text in m.text for text in expected[(m.session_id, m.turn)])
        assert q.abstention == q.id.endswith("_abs")


@settings(max_examples=10, deadline=None)
@given(st.integers(50, 600), SEEDS)
def test_write_is_byte_identical_per_seed(tmp_path_factory, n, seed):
    d = tmp_path_factory.mktemp("syn")
    a, b, c = d / "a.json", d / "b.json", d / "c.json"
    sha_a = write_synthetic(a, n_messages=n, seed=seed)
    sha_b = write_synthetic(b, n_messages=n, seed=seed)
    write_synthetic(c, n_messages=n, seed=seed + 1)
    assert a.read_bytes() == b.read_bytes() and sha_a == sha_b == hashlib.sha256(a.read_bytes()).hexdigest()
    assert a.read_bytes() != c.read_bytes()
    records = json.loads(a.read_bytes())
    assert records == generate_records(n, seed)


def test_canonical_bytes_match_json_dumps():
    records = generate_records(300, seed=2, n_histories=2, questions_per_history=6)
    expected = json.dumps(records, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()
    assert b"".join(canonical_json_chunks(records)) == expected
    assert records_sha256(records) == hashlib.sha256(expected).hexdigest()


def test_independent_of_hash_seed_and_of_other_histories():
    code = (
        "from lazymem.data.synthetic import generate_records, records_sha256\n"
        "print(records_sha256(generate_records(400, 9)))"
    )
    shas = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": h},
        ).stdout
        for h in ("0", "1", "12345")
    }
    assert len(shas) == 1
    one = json.dumps(generate_records(400, 9, n_histories=1))
    two = generate_records(400, 9, n_histories=2)
    assert one == json.dumps(two[:12])  # history 0 does not depend on how many histories follow


def test_synthetic_dataset_name_and_sha(tmp_path):
    ds = synthetic_dataset(n_messages=200, seed=4, n_histories=2, questions_per_history=6)
    spec = "synthetic:messages=200,seed=4,histories=2,questions=6"
    assert ds.name == spec == ds.source == spec_string(200, 4, 2, 6)
    assert ds.sha256 == write_synthetic(
        tmp_path / "x.json", n_messages=200, seed=4, n_histories=2, questions_per_history=6
    )
    assert ds.n_messages == 400 and len(ds.questions) == 12
    assert ds.question("syn4-h1-q0").history_id != ds.question("syn4-h0-q0").history_id


def test_parse_spec():
    defaults = {"n_messages": 400, "seed": 0, "n_histories": 1, "questions_per_history": 12, "varied": 0}
    assert parse_spec("synthetic") == parse_spec("synthetic:") == defaults
    assert parse_spec("synthetic:messages=1k,seed=3,histories=2,questions=8") == {
        "n_messages": 1000,
        "seed": 3,
        "n_histories": 2,
        "questions_per_history": 8,
        "varied": 0,
    }
    assert parse_spec("synthetic: messages = 100k ")["n_messages"] == 100_000
    assert parse_spec("synthetic:messages=1.5k")["n_messages"] == 1500
    assert parse_spec("synthetic:messages=1M")["n_messages"] == 1_000_000
    kwargs = {"n_messages": 2000, "seed": 7, "n_histories": 3, "questions_per_history": 5, "varied": 0}
    assert parse_spec(spec_string(**kwargs)) == kwargs
    assert parse_spec(spec_string(**{**kwargs, "varied": 1}))["varied"] == 1


def test_varied_keeps_evidence_answers_and_the_plain_data_set():
    from lazymem.data.synthetic.vary import HARD_NEGATIVES, OPENERS

    plain, plain_facts = generate_with_facts(400, 3, n_histories=2, questions_per_history=12)
    varied, facts = generate_with_facts(400, 3, n_histories=2, questions_per_history=12, varied=1)
    assert generate_records(400, 3, n_histories=2) == plain  # the plain data set is untouched by the option
    assert [r["answer"] for r in varied] == [r["answer"] for r in plain]
    assert facts == plain_facts  # same gold turns, same answer-bearing strings
    assert sum(a["question"] != b["question"] for a, b in zip(plain, varied)) >= 12  # paraphrase frames
    endings = tuple(h.split("{topic}")[-1] for h in HARD_NEGATIVES)
    hard, opened = 0, 0
    for rec in varied:
        for sid, session in zip(rec["haystack_session_ids"], rec["haystack_sessions"]):
            for t, turn in enumerate(session):
                is_hard = turn["content"].endswith(endings)
                hard += is_hard
                opened += turn["content"].startswith(OPENERS)
                assert not (is_hard and turn["has_answer"]), (sid, t)  # a hard negative is never evidence
        for ev in facts[rec["question_id"]]:
            i = rec["haystack_session_ids"].index(ev.session_id)
            assert all(c in rec["haystack_sessions"][i][ev.turn]["content"] for c in ev.contains)
    assert hard > 0 and opened > 0


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("synthetic:size=3", "'size'"),
        ("synthetic:messages=lots", "messages='lots'"),
        ("synthetic:seed=1.2345k", "seed='1.2345k'"),
        ("synthetic:messages", "'messages'"),
        ("synthetic:seed=1,seed=2", "'seed' given twice"),
        ("synth:messages=5", "'synthetic'"),
    ],
)
def test_parse_spec_errors_name_the_key(spec, needle):
    with pytest.raises(ValueError, match=re.escape(needle)):
        parse_spec(spec)


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"n_messages": 20}, "n_messages=20 is too small"),
        ({"n_messages": 3}, "n_messages must be an integer >= 6"),
        ({"n_histories": 0}, "n_histories"),
        ({"questions_per_history": 0}, "questions_per_history"),
        ({"seed": "1"}, "seed"),
        ({"n_messages": 5000, "questions_per_history": 400}, "too many"),
    ],
)
def test_bad_arguments_raise_config_error(kwargs, needle):
    with pytest.raises(ConfigError, match=re.escape(needle)):
        generate_records(**kwargs)


def test_distractors_share_vocabulary_with_facts():
    # Values the questions ask about also turn up in non-evidence turns, so lexical match alone is not enough.
    records, facts = generate_with_facts(2000, seed=0, questions_per_history=12)
    rec = records[0]
    gold = {(e.session_id, e.turn) for ev in facts.values() for e in ev}
    other = [
        t["content"]
        for sid, s in zip(rec["haystack_session_ids"], rec["haystack_sessions"])
        for k, t in enumerate(s)
        if (sid, k) not in gold
    ]
    words = {w for ev in facts.values() for e in ev for text in e.contains for w in re.findall(r"[A-Za-z]{4,}", text)}
    shared = [w for w in sorted(words) if any(w in t for t in other)]
    assert len(shared) >= len(words) / 3, (shared, words)


@pytest.mark.slow
def test_100k_messages():
    records, facts = generate_with_facts(100_000, seed=1)
    assert sum(len(s) for s in records[0]["haystack_sessions"]) == 100_000
    assert len(records) == 12 and len(records_sha256(records)) == 64
    ds = parse_records(records, file="synthetic", name="synthetic")
    assert ds.n_messages == 100_000 and len(ds.histories) == 1
    q = ds.questions[0]
    assert {(ds.history(q)[p].session_id, ds.history(q)[p].turn) for p in q.evidence} == {
        (e.session_id, e.turn) for e in facts[q.id]
    }
