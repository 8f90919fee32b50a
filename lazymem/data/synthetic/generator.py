"""The generator's public API: records per question, evidence, canonical bytes and hash, specs.

``generate_records`` / ``generate_with_facts`` build ``n_histories`` histories (``history``),
each from its own ``random.Random`` seeded by a string, and turn them into LongMemEval
records (see the package docstring for sharing and evidence). ``write_synthetic`` writes
them as canonical JSON; ``records_sha256`` is that file's hash; ``parse_spec`` and
``spec_string`` convert between generator arguments and "synthetic:messages=...,..." specs.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterator

from lazymem.data.synthetic.history import _history
from lazymem.data.synthetic.long import LEVELS, lengthen
from lazymem.data.synthetic.model import Evidence, _stamp
from lazymem.data.synthetic.vary import vary
from lazymem.errors import ConfigError


def _generate(n_messages: int, seed: int, n_histories: int, questions_per_history: int, varied: int = 0, long: int = 0):
    for name, value, lo in (
        ("n_messages", n_messages, 6),
        ("n_histories", n_histories, 1),
        ("questions_per_history", questions_per_history, 1),
        ("varied", varied, 0),
        ("long", long, 0),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < lo:
            raise ConfigError(f"{name} must be an integer >= {lo}, got {value!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError(f"seed must be an integer, got {seed!r}")
    if long and long not in LEVELS:
        raise ConfigError(f"long must be 0 (short turns) or one of {LEVELS} (long.py's levels), got {long!r}")
    records, facts_out = [], {}
    for h in range(n_histories):
        # A string seed is hashed with SHA-512 by `random`: stable across runs and PYTHONHASHSEED,
        # and history h is the same whatever n_histories is.
        rng = random.Random(f"lazymem-synthetic:{seed}:{h}")
        prefix = f"syn{seed}-h{h}"
        sessions, sids, dates, asked, facts, evidence, times = _history(rng, n_messages, questions_per_history, prefix)
        qa = [
            fact.resolve([times[s] for s, _, _ in ev], asked)
            if fact.resolve is not None
            else (fact.question, fact.answer)
            for fact, ev in zip(facts, evidence)
        ]
        if varied:  # its own rng: the plain data set of this seed stays byte-identical
            asked_as = vary(
                random.Random(f"lazymem-synthetic-varied:{seed}:{h}"), sessions, [q for q, _ in qa], evidence
            )
            qa = [(q, a) for q, (_, a) in zip(asked_as, qa)]
        if long:  # its own rng too: specs without `long` stay byte-identical
            lengthen(random.Random(f"lazymem-synthetic-long:{seed}:{h}"), sessions, level=long)
        for i, (fact, ev, (question, answer)) in enumerate(zip(facts, evidence, qa)):
            qid = f"{prefix}-q{i}" + ("_abs" if fact.abstention else "")
            hay = list(sessions)
            for s in sorted({s for s, _, _ in ev}):
                hay[s] = list(sessions[s])
            for s, t, _ in ev:
                hay[s][t] = {**hay[s][t], "has_answer": True}
            records.append(
                {
                    "question_id": qid,
                    "question_type": fact.qtype,
                    "question": question,
                    "answer": answer,
                    "question_date": _stamp(asked),
                    "haystack_session_ids": sids,
                    "haystack_dates": dates,
                    "haystack_sessions": hay,
                    "answer_session_ids": [sids[s] for s in sorted({s for s, _, _ in ev})],
                }
            )
            facts_out[qid] = [Evidence(sids[s], t, c) for s, t, c in ev]
    return records, facts_out


def generate_records(
    n_messages: int = 400,
    seed: int = 0,
    n_histories: int = 1,
    questions_per_history: int = 12,
    varied: int = 0,
    long: int = 0,
) -> list[dict]:
    """LongMemEval-schema records, one per question, over n_histories synthetic histories.

    Each history has exactly ``n_messages`` messages (one fewer when odd: sessions are whole
    user/assistant pairs). Question ids are ``syn{seed}-h{h}-q{i}`` (``_abs`` appended for
    abstention). Deterministic in the arguments. See the package docstring for sharing and
    evidence. Raises ConfigError when n_messages is too small for the questions (roughly
    6 messages per planted statement) or questions_per_history exceeds what one history holds
    (~200; past ~60 the six types are no longer balanced, as types run out of distinct facts).
    ``varied=1`` adds surface variety for training data (``vary``: paraphrased questions,
    openers, hard negatives); 0 is the plain data set. ``long=1`` makes about half the assistant
    turns LongMemEval_S-like long answers (``long.lengthen``: the text kept, a list added); ``long=2``
    gives assistant and user turns LongMemEval_S's length spread (median ~310 / ~35 words).

    >>> r = generate_records(n_messages=100, seed=0, questions_per_history=6)[0]
    >>> r["question_id"], r["haystack_dates"][0] < r["haystack_dates"][-1] < r["question_date"]
    ('syn0-h0-q0', True)
    """
    return _generate(n_messages, seed, n_histories, questions_per_history, varied, long)[0]


def generate_with_facts(
    n_messages: int = 400,
    seed: int = 0,
    n_histories: int = 1,
    questions_per_history: int = 12,
    varied: int = 0,
    long: int = 0,
) -> tuple[list[dict], dict[str, list[Evidence]]]:
    """generate_records plus, per question id, its evidence turns and the strings each contains.

    For abstention questions the evidence is the near-miss statement (its strings are the
    near-miss values, e.g. the sister's name when the question asks for a brother's).
    """
    return _generate(n_messages, seed, n_histories, questions_per_history, varied, long)


# ---------------------------------------------------------------------------- bytes, hashing, specs
def canonical_json_chunks(records: list[dict]) -> Iterator[bytes]:
    """The UTF-8 bytes of ``json.dumps(records, ensure_ascii=False, sort_keys=True, separators=(",", ":"))``, in pieces.

    Shared list objects (sessions, ids, dates) are encoded once: a 100k-message history
    repeated over 12 records costs one encoding, not twelve.

    >>> recs = [{"b": [[1], [2]], "a": "é"}]
    >>> b"".join(canonical_json_chunks(recs)).decode() == json.dumps(recs, ensure_ascii=False, sort_keys=True,
    ...                                                             separators=(",", ":"))
    True
    """

    def enc(obj) -> bytes:
        return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")

    memo: dict[int, bytes] = {}  # id() is stable: every object stays alive in `records` meanwhile

    def cached(obj) -> bytes:
        data = memo.get(id(obj))
        if data is None:
            data = memo[id(obj)] = enc(obj)
        return data

    yield b"["
    for i, rec in enumerate(records):
        yield b",{" if i else b"{"
        for j, key in enumerate(sorted(rec)):
            value = rec[key]
            yield (b"," if j else b"") + enc(key) + b":"
            if key == "haystack_sessions" and isinstance(value, list):
                yield b"["
                for k, session in enumerate(value):
                    if k:
                        yield b","
                    yield cached(session)
                yield b"]"
            elif isinstance(value, list):
                yield cached(value)
            else:
                yield enc(value)
        yield b"}"
    yield b"]"


def records_sha256(records: list[dict]) -> str:
    """sha256 of the canonical JSON bytes of the records (what write_synthetic writes)."""
    h = hashlib.sha256()
    for chunk in canonical_json_chunks(records):
        h.update(chunk)
    return h.hexdigest()


def spec_string(
    n_messages: int = 400,
    seed: int = 0,
    n_histories: int = 1,
    questions_per_history: int = 12,
    varied: int = 0,
    long: int = 0,
) -> str:
    """The canonical spec of a generator call (Dataset.name and .source); ``varied`` / ``long`` only when set.

    >>> spec_string(1000, 3), spec_string(400, 1, 8, 12, varied=1)
    ('synthetic:messages=1000,seed=3,histories=1,questions=12', 'synthetic:messages=400,seed=1,histories=8,questions=12,varied=1')
    """  # noqa: E501  (a doctest's expected output is one line)
    spec = f"synthetic:messages={n_messages},seed={seed},histories={n_histories},questions={questions_per_history}"
    return spec + (f",varied={varied}" if varied else "") + (f",long={long}" if long else "")


def synthetic_dataset(
    n_messages: int = 400,
    seed: int = 0,
    n_histories: int = 1,
    questions_per_history: int = 12,
    varied: int = 0,
    long: int = 0,
):
    """The generated records loaded as a Dataset; sha256 = records_sha256 (= write_synthetic's file hash)."""
    from lazymem.data.longmemeval import parse_records

    records = generate_records(n_messages, seed, n_histories, questions_per_history, varied, long)
    spec = spec_string(n_messages, seed, n_histories, questions_per_history, varied, long)
    return parse_records(records, file=spec, name=spec, sha256=records_sha256(records))


def write_synthetic(
    path,
    n_messages: int = 400,
    seed: int = 0,
    n_histories: int = 1,
    questions_per_history: int = 12,
    varied: int = 0,
    long: int = 0,
) -> str:
    """Write the records as canonical JSON (sorted keys, UTF-8, compact) and return the file's sha256.

    Byte-identical for the same arguments; the file loads with ``load_longmemeval``.
    """
    records = generate_records(n_messages, seed, n_histories, questions_per_history, varied, long)
    h = hashlib.sha256()
    with open(path, "wb") as f:
        for chunk in canonical_json_chunks(records):
            h.update(chunk)
            f.write(chunk)
    return h.hexdigest()


_SPEC_KEYS = {
    "messages": "n_messages",
    "seed": "seed",
    "histories": "n_histories",
    "questions": "questions_per_history",
    "varied": "varied",
    "long": "long",
}
_SUFFIX = {"": 1, "k": 1_000, "m": 1_000_000}


def _number(key: str, text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmM]?)", text.strip().replace("_", ""))
    if m is None:
        raise ConfigError(f"synthetic spec: {key}={text!r} is not a whole number (examples: 400, 1k, 100k, 1.5k)")
    value = (
        float(m.group(1)) * _SUFFIX[m.group(2).lower()]
        if "." in m.group(1)
        else int(m.group(1)) * _SUFFIX[m.group(2).lower()]
    )
    if value != int(value):
        raise ConfigError(f"synthetic spec: {key}={text!r} is not a whole number")
    return int(value)


def parse_spec(spec: str) -> dict:
    """Parse "synthetic[:messages=N,seed=S,histories=H,questions=Q,varied=V,long=G]" into generate_records kwargs.

    Every key is optional (defaults: messages=400, seed=0, histories=1, questions=12, varied=0, long=0;
    ``long`` appears in the result only when given, so existing specs parse as before);
    numbers accept k/m suffixes. A bad key or value raises ConfigError (a ValueError) naming it.

    >>> parse_spec("synthetic:messages=100k,seed=3")
    {'n_messages': 100000, 'seed': 3, 'n_histories': 1, 'questions_per_history': 12, 'varied': 0}
    >>> parse_spec("synthetic:size=3")
    Traceback (most recent call last):
    ...
    lazymem.errors.ConfigError: synthetic spec: unknown key 'size' (expected messages, seed, histories, questions, varied, long)
    """  # noqa: E501  (a doctest's expected output is one line)
    head, _, body = str(spec).strip().partition(":")
    if head.strip() != "synthetic":
        raise ConfigError(f"synthetic spec must start with 'synthetic', got {spec!r}")
    out = {"n_messages": 400, "seed": 0, "n_histories": 1, "questions_per_history": 12, "varied": 0}
    seen = set()
    for part in body.split(","):
        if not part.strip():
            continue
        key, eq, value = part.partition("=")
        key = key.strip()
        if key not in _SPEC_KEYS:
            raise ConfigError(f"synthetic spec: unknown key {key!r} (expected {', '.join(_SPEC_KEYS)})")
        if not eq:
            raise ConfigError(f"synthetic spec: key {key!r} has no value (write {key}=...)")
        if key in seen:
            raise ConfigError(f"synthetic spec: key {key!r} given twice")
        seen.add(key)
        out[_SPEC_KEYS[key]] = _number(key, value)
    return out
