"""The casual two-person generator (lazymem.data.casual) through the real LoCoMo parser, and long turns."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lazymem.data import load_dataset
from lazymem.data.casual import (
    casual_samples,
    casual_samples_with_facts,
    casual_spec_string,
    parse_casual_spec,
    samples_sha256,
)
from lazymem.data.datasets import spec_style
from lazymem.data.locomo import load_locomo
from lazymem.data.synthetic import generate_with_facts
from lazymem.errors import ConfigError

SPEC = "synthetic-casual:conversations=2,sessions=10,seed=5,questions=15"


def test_same_spec_same_bytes_in_a_fresh_interpreter():
    code = (
        "from lazymem.data.casual import casual_samples, samples_sha256\n"
        "print(samples_sha256(casual_samples(2, 10, 5, 15)))"
    )
    shas = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": h}
        ).stdout.strip()
        for h in ("1", "2")
    }
    assert shas == {samples_sha256(casual_samples(2, 10, 5, 15))}
    assert samples_sha256(casual_samples(2, 10, 6, 15)) not in shas  # the seed matters
    # conversation 0 does not depend on how many conversations are asked for
    assert casual_samples(1, 10, 5, 15)[0] == casual_samples(3, 10, 5, 15)[0]


def test_loads_through_the_locomo_parser_with_names_as_roles(tmp_path):
    ds = load_dataset(SPEC)
    assert ds.name == SPEC and len(ds.histories) == 2 and len(ds.questions) == 30
    for hid, h in ds.histories.items():
        assert hid.startswith("syncasual5-c") and not hid.startswith("conv-")
        assert len(h.speakers) == 2 and {m.role for m in h} == set(h.speakers)
        assert all(a.time < b.time for a, b in zip(h, list(h)[1:]) if a.session_id != b.session_id)
    # the same samples written to a file load identically with load_locomo
    path = tmp_path / "casual.json"
    path.write_text(json.dumps(casual_samples(2, 10, 5, 15)), encoding="utf-8")
    from_file = load_locomo(path, bad_evidence="error")
    assert [q.text for q in from_file.questions] == [q.text for q in ds.questions]
    assert [m.text for m in from_file.histories["syncasual5-c1"]] == [m.text for m in ds.histories["syncasual5-c1"]]
    assert {q.category for q in ds.questions} == {1, 2, 3, 4, 5}
    assert spec_style(SPEC) == "casual"


@pytest.mark.parametrize("topical,asked", [(0, 0), (1, 0), (2, 0), (0, 1), (2, 1)])
def test_every_evidence_turn_exists_and_holds_its_answer_strings(topical, asked):
    samples, facts = casual_samples_with_facts(3, 12, 7, 20, topical=topical, asked=asked)
    for sample in samples:
        turns = {
            t["dia_id"]: t
            for k, v in sample["conversation"].items()
            if k.startswith("session_") and not k.endswith("date_time")
            for t in v
        }
        for j, qa in enumerate(sample["qa"]):
            ev = facts[f"{sample['sample_id']}:q{j}"]
            assert [d for d, _ in ev] == qa["evidence"] and qa["evidence"]
            for dia, contains in ev:
                assert all(c in turns[dia]["text"] for c in contains), (dia, contains, turns[dia]["text"])
            answer = qa.get("answer", qa.get("adversarial_answer"))
            if qa["category"] in (4, 5):  # single statement, the answer verbatim in it
                assert answer in turns[qa["evidence"][0]]["text"]
            if qa["category"] == 5:
                assert "answer" not in qa and qa["adversarial_answer"]
                said_by = turns[qa["evidence"][0]]["speaker"]
                assert said_by not in qa["question"]  # asked about the other speaker
            if qa["category"] == 1:
                sessions = {d.split(":")[0] for d in qa["evidence"]}
                assert len(sessions) == 2


def test_distractors_reuse_fact_vocabulary_about_other_people():
    sample = casual_samples(1, 12, 3, 20)[0]
    texts = [
        t["text"]
        for k, v in sample["conversation"].items()
        if k.startswith("session_") and not k.endswith("date_time")
        for t in v
    ]
    assert any("[shares a photo of" in t for t in texts)
    assert any(w in t for t in texts for w in ("My coworker", "My friend", "My neighbor", "from work"))
    lengths = sorted(len(t.split()) for t in texts)
    assert lengths[0] <= 3 and lengths[-1] >= 20  # one-liners to a few sentences


def test_topical_off_keeps_the_bytes_v2_was_trained_on():
    """v2's data card names its casual source by this hash; the option must not move the default's stream."""
    assert samples_sha256(casual_samples(3, 14, 23, 12)).startswith("724a98977a978fc6")
    assert casual_samples(3, 14, 23, 12, topical=0) == casual_samples(3, 14, 23, 12)
    # and topical=2 does not move topical=1's (the v3 candidate's data card names this hash)
    assert samples_sha256(casual_samples(4, 14, 25, 12, topical=1)).startswith("f66657dfd490f88f")


def test_first_person_echoes_are_the_facts_own_speaker_and_never_the_answer():
    import re

    from lazymem.data.casual.chatter import LEAD_INS, SELF_ECHOES

    samples, facts = casual_samples_with_facts(2, 14, 11, 12, topical=2)
    templates = [
        re.compile(re.sub(r"\\\{\w+\\\}", ".+", re.escape(t)) + "$") for pairs in SELF_ECHOES.values() for t, _ in pairs
    ]
    n_self = n_led = n_gold = 0
    for sample in samples:
        ev = {j: facts[f"{sample['sample_id']}:q{j}"] for j in range(len(sample["qa"]))}
        answers = {c.lower() for e in ev.values() for _, cs in e for c in cs}
        evidence = {d for e in ev.values() for d, _ in e}
        for k, v in sample["conversation"].items():
            if not k.startswith("session_") or k.endswith("date_time"):
                continue
            for t in v:
                if t["dia_id"] in evidence:
                    n_gold += 1
                    n_led += any(t["text"].startswith(x) for x in LEAD_INS)
                elif any(p.match(t["text"]) for p in templates):
                    n_self += 1
                    assert not any(re.search(rf"\b{re.escape(a)}\b", t["text"].lower()) for a in answers), t
    assert n_self >= 10 and 0 < n_led < n_gold


def test_topical_echoes_share_the_questions_words_and_hold_no_answer():
    """With topical=1 far more non-evidence turns share a content word with a question of their
    conversation (speakers' names aside), and no added turn holds an answer-bearing string."""
    from lazymem.text import content_tokens

    def shared(topical):
        samples, facts = casual_samples_with_facts(2, 14, 11, 12, topical=topical)
        share, texts = [], []
        for sample in samples:
            conv = sample["conversation"]
            names = content_tokens(conv["speaker_a"] + " " + conv["speaker_b"])
            evidence = {d for j in range(len(sample["qa"])) for d, _ in facts[f"{sample['sample_id']}:q{j}"]}
            words = [content_tokens(qa["question"]) - names for qa in sample["qa"]]
            for k, v in conv.items():
                if k.startswith("session_") and not k.endswith("date_time"):
                    for t in v:
                        if t["dia_id"] not in evidence:
                            texts.append(t["text"])
                            share.append(any(w & content_tokens(t["text"]) for w in words))
        return sum(share) / len(share), texts

    off, _ = shared(0)
    on, texts = shared(1)
    assert on > off + 0.08, (off, on)  # seeds 4, 11, 23: +0.08 to +0.16
    assert not any("{" in t or "}" in t for t in texts)  # every slot of every echo filled


def test_an_echo_never_holds_an_answer_bearing_string():
    import random

    from lazymem.data.casual.facts import Fact, Stmt
    from lazymem.data.casual.generator import _echo_block, _Fill

    fact = Fact(
        4,
        [Stmt(0, "Meet Biscuit, my beagle!", ("Biscuit",))],
        "What is the name of Maya's beagle?",
        "Biscuit",
        topic="pet",
        slots={"pet": "beagle"},
    )
    rng = random.Random(0)
    for _ in range(20):
        block = _echo_block(rng, fact, _Fill(rng, {"Maya", "Daniel"}, {}), ("Biscuit",))
        assert len(block) == 2 and not any(g for _, _, g in block)
        assert {w for w, _, _ in block} == {0, 1} and "Biscuit" not in block[0][1] + block[1][1]
        assert any("beagle" in t for _, t, _ in block) or "beagle" in block[0][1] + block[1][1]
    # every pet echo names the pet: with the pet itself answer-bearing, none is left
    assert _echo_block(rng, fact, _Fill(rng, set(), {}), ("beagle",)) == []


def test_spec_parse_format_and_errors():
    assert casual_spec_string(**parse_casual_spec(SPEC)) == SPEC
    assert parse_casual_spec("synthetic-casual") == {
        "n_conversations": 1,
        "n_sessions": 12,
        "seed": 0,
        "n_questions": 20,
        "topical": 0,
        "asked": 0,
    }
    assert casual_spec_string(**parse_casual_spec(SPEC + ",topical=1")) == SPEC + ",topical=1"
    assert casual_spec_string(**parse_casual_spec(SPEC + ",topical=2,asked=1")) == SPEC + ",topical=2,asked=1"
    assert casual_spec_string(**parse_casual_spec(SPEC + ",topical=2")) == SPEC + ",topical=2"
    with pytest.raises(ConfigError, match="topical"):
        parse_casual_spec(SPEC + ",topical=3")
    for bad, key in (
        ("synthetic-casual:turns=3", "'turns'"),
        ("synthetic-casual:seed=x", "seed="),
        ("synthetic-casual:seed=1,seed=2", "'seed' given twice"),
        ("synthetic-casual:seed", "'seed'"),
    ):
        with pytest.raises(ConfigError, match=key):
            parse_casual_spec(bad)
    with pytest.raises(ConfigError, match="sessions"):
        casual_samples(1, 1, 0, 5)
    with pytest.raises(ConfigError, match="too few sessions"):
        casual_samples(1, 3, 0, 30)
    with pytest.raises(ConfigError, match="subsets"):
        load_dataset(SPEC + "#paper")


def test_long_turns_keep_evidence_verbatim_and_leave_plain_specs_alone():
    plain, plain_facts = generate_with_facts(120, 3, 1, 6, varied=1)
    long, long_facts = generate_with_facts(120, 3, 1, 6, varied=1, long=1)
    assert [r["question"] for r in plain] == [r["question"] for r in long]
    sessions = {sid: s for r in long for sid, s in zip(r["haystack_session_ids"], r["haystack_sessions"])}
    for evidence in long_facts.values():
        for ev in evidence:
            assert all(c in sessions[ev.session_id][ev.turn]["content"] for c in ev.contains)
    words = [len(t["content"].split()) for s in sessions.values() for t in s if t["role"] == "assistant"]
    assert max(words) >= 150 and sum(w >= 100 for w in words) >= len(words) / 4
    assert spec_style("synthetic:messages=120,seed=3,long=1") == "synthetic-long"
    assert load_dataset("synthetic:messages=120,seed=3,histories=1,questions=6,long=1").name.endswith(",long=1")


def test_long2_keeps_evidence_verbatim_and_long1_bytes_unchanged():
    from lazymem.data.synthetic import generate_records, records_sha256

    # v2's SFT data (configs/recipes/lazymem-135m/data.yaml) was built from long=1: its bytes are pinned
    assert (
        records_sha256(generate_records(120, 3, 1, 6, varied=1, long=1))
        == "462e1d7ee0a0e68dac749adb2095cdbe3feb4a683e5e760ca6ff561c6d532675"
    )
    plain, _ = generate_with_facts(120, 3, 1, 6, varied=1)
    long, long_facts = generate_with_facts(120, 3, 1, 6, varied=1, long=2)
    assert [r["question"] for r in plain] == [r["question"] for r in long]
    sessions = {sid: s for r in long for sid, s in zip(r["haystack_session_ids"], r["haystack_sessions"])}
    plain_sessions = {sid: s for r in plain for sid, s in zip(r["haystack_session_ids"], r["haystack_sessions"])}
    for evidence in long_facts.values():
        for ev in evidence:
            assert all(c in sessions[ev.session_id][ev.turn]["content"] for c in ev.contains)
    for sid, session in sessions.items():  # every turn starts with its plain text: only text is added
        assert all(t["content"].startswith(p["content"]) for t, p in zip(session, plain_sessions[sid]))
    with pytest.raises(ConfigError, match="long must be"):
        generate_records(120, 3, 1, 6, long=3)


def test_asked_statements_answer_the_others_question_next_to_it():
    """asked=1: about half the single-hop and adversarial statements follow the other speaker's question, which
    shares the question's words, while the answer turn (the evidence) holds the value; asked=0 moves no bytes."""
    from lazymem.construct.extractive import lexical_scores
    from lazymem.data.casual.facts import ASKED

    asks = {a for pairs in ASKED.values() for a, _ in pairs}
    samples, facts = casual_samples_with_facts(4, 14, 9, 12, asked=1)
    n_single = n_asked = 0
    for sample in samples:
        turns = [
            t
            for k, v in sample["conversation"].items()
            if k.startswith("session_") and not k.endswith("date_time")
            for t in v
        ]
        index = {t["dia_id"]: i for i, t in enumerate(turns)}
        for j, qa in enumerate(sample["qa"]):
            if qa["category"] not in (4, 5):
                continue
            n_single += 1
            gold = turns[index[qa["evidence"][0]]]
            before = turns[index[qa["evidence"][0]] - 1]
            for _, contains in facts[f"{sample['sample_id']}:q{j}"]:
                assert all(c in gold["text"] for c in contains)
            if any(_matches(before["text"], a) for a in asks):
                n_asked += 1
                assert before["speaker"] != gold["speaker"]  # the other speaker asks
                q_ask, q_gold = lexical_scores(qa["question"], [before["text"], gold["text"]])
                assert q_ask > 0 and q_ask >= q_gold, (qa["question"], before["text"], gold["text"])
    assert n_single >= 12 and 0.25 <= n_asked / n_single <= 0.75, (n_asked, n_single)
    assert casual_samples(3, 14, 23, 12, asked=0) == casual_samples(3, 14, 23, 12)
    with pytest.raises(ConfigError, match="asked"):
        parse_casual_spec("synthetic-casual:asked=2")
    assert parse_casual_spec(casual_spec_string(2, 14, 4, 12, asked=1))["asked"] == 1


def _matches(text: str, template: str) -> bool:
    import re

    return re.fullmatch(re.sub(r"\\\{\w+\\\}", ".+", re.escape(template)), text) is not None
