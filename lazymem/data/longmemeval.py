"""Load LongMemEval (official JSON schema) into the shared records.

One official record = one question over its own haystack: ``haystack_session_ids``,
``haystack_dates`` and ``haystack_sessions`` (sessions of ``{role, content, has_answer?}``
turns). Choices made here:

- Sessions keep the file's order (the official order: "sorted by timestamp" for _s/_m,
  unsorted for _oracle; _s has a few same-day inversions). ``Message.time`` lets a caller
  re-sort. Positions therefore match every tool that reads the file in order.
- Records with identical haystacks (same session ids, dates, roles and contents; the
  ``has_answer`` flags may differ) share one History, whose id is the question_id of the
  first question over it; ``Message.gold_for`` collects the questions it is evidence for.
- A question's evidence = the turns flagged ``has_answer`` inside its own
  ``answer_session_ids`` sessions, as positions in the history (ascending).
- A third-party "list form" (``questions``/``answers`` lists, ``answer_session_ids`` a
  list of lists, as in the shared ``s_fragment_3haystacks.json``) is read as item 0 of
  each list, with a LoadIssue per record and a warning. When item 0 demonstrably is not
  the question the haystack's ``has_answer`` flags were made for (flagged turns outside
  its answer sessions), the record is dropped (``bad_evidence="warn"``) or rejected
  (``"error"``): its real question is not in the file.
- Anything else malformed raises LoadError naming the file, record and field path.

>>> ds = parse_records([{
...     "question_id": "q1", "question_type": "single-session-user",
...     "question": "Where did I move?", "answer": "Lisbon",
...     "question_date": "2023/06/01 (Thu) 10:00",
...     "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/20 (Sat) 02:21"],
...     "haystack_sessions": [[{"role": "user", "content": "I moved to Lisbon.", "has_answer": True},
...                            {"role": "assistant", "content": "Congratulations!"}]],
...     "answer_session_ids": ["s1"]}], file="mem.json", name="demo")
>>> q = ds.questions[0]
>>> q.evidence, ds.history(q)[0].id, ds.history(q)[0].gold_for
((0,), 's1#0', ('q1',))
"""

from __future__ import annotations

import hashlib
import os
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from lazymem.errors import LoadError
from lazymem.files import read_json
from lazymem.records import LONGMEMEVAL_TYPES, Dataset, History, LoadIssue, Message, Question

# Public names -> (hub dataset repo, candidate filenames in order). The original repo stores
# the files without a ".json" suffix (the suffix is tried second in case that changes back);
# the cleaned re-release keeps it, and its oracle file has no "_cleaned" suffix.
HUB_FILES: dict[str, tuple[str, tuple[str, ...]]] = {
    "longmemeval_s": ("xiaowu0162/longmemeval", ("longmemeval_s", "longmemeval_s.json")),
    "longmemeval_m": ("xiaowu0162/longmemeval", ("longmemeval_m", "longmemeval_m.json")),
    "longmemeval_oracle": ("xiaowu0162/longmemeval", ("longmemeval_oracle", "longmemeval_oracle.json")),
    "longmemeval_s_cleaned": ("xiaowu0162/longmemeval-cleaned", ("longmemeval_s_cleaned.json",)),
    "longmemeval_m_cleaned": ("xiaowu0162/longmemeval-cleaned", ("longmemeval_m_cleaned.json",)),
    "longmemeval_oracle_cleaned": ("xiaowu0162/longmemeval-cleaned", ("longmemeval_oracle.json",)),
}
_FIELDS = (
    "question_id",
    "question_type",
    "question",
    "answer",
    "question_date",
    "haystack_session_ids",
    "haystack_dates",
    "haystack_sessions",
    "answer_session_ids",
)
_ROLES = ("user", "assistant")


@lru_cache(maxsize=65536)
def parse_time(stamp: str) -> datetime | None:
    """Parse a LongMemEval date ("2023/05/20 (Sat) 02:21"); None when it does not parse.

    >>> parse_time("2023/05/20 (Sat) 02:21"), parse_time("yesterday")
    (datetime.datetime(2023, 5, 20, 2, 21), None)
    """
    try:
        return datetime.strptime(stamp, "%Y/%m/%d (%a) %H:%M")
    except ValueError:
        return None


def _kind(value: object) -> str:
    """A short description of a JSON value for error messages."""
    names = {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)


@dataclass
class _Haystack:
    """A haystack seen while parsing; becomes one History if a question uses it."""

    sessions: list  # the raw sessions of the first record that had it
    sids: list
    dates: list
    offsets: list[int]  # position of each session's first turn
    index: dict[str, int]  # session id -> session index
    flagged: list[tuple[int, int]]  # (session, turn) with has_answer, for the `sessions` object
    history_id: str | None = None  # question_id of the first kept question over it
    gold: dict[int, list[str]] = field(default_factory=dict)  # pos -> question ids


class _Parser:
    """Validates records one by one; keeps haystacks, questions and issues."""

    def __init__(self, file: str, bad_evidence: str):
        self.file, self.bad_evidence = file, bad_evidence
        self.by_hash: dict[bytes, _Haystack] = {}
        self.by_obj: dict[int, _Haystack] = {}
        self.questions: list[Question] = []
        self.issues: list[LoadIssue] = []
        self.seen: dict[str, int] = {}  # question_id -> record index
        self.list_form = self.dropped = 0
        self.outside: list[tuple[int, LoadIssue]] = []  # (id of the sessions list, issue), see record()
        self.shared: set[int] = set()  # ids of sessions lists used by more than one record

    def error(self, record: str | None, fld: str | None, problem: str) -> LoadError:
        return LoadError(self.file, record, fld, problem)

    def typed(self, rec: dict, key: str, types: type, what: str, where: str):
        if key not in rec:
            raise self.error(where, key, f"missing (official LongMemEval records have {', '.join(_FIELDS)})")
        value = rec[key]
        if not isinstance(value, types):
            raise self.error(where, key, f"expected {what}, found {_kind(value)}")
        return value

    def record(self, i: int, rec: object) -> None:
        if not isinstance(rec, dict):
            raise self.error(f"record {i}", None, f"expected an object (one question), found {_kind(rec)}")
        qid = rec.get("question_id")
        where = f"record {i} (question_id {qid!r})" if isinstance(qid, str) else f"record {i}"
        qid = self.typed(rec, "question_id", str, "a string", where)
        if qid in self.seen:
            raise self.error(
                where, "question_id", f"duplicate question_id {qid!r} (first used by record {self.seen[qid]})"
            )
        self.seen[qid] = i
        qtype = self.typed(rec, "question_type", str, "a string", where)
        if qtype not in LONGMEMEVAL_TYPES:
            raise self.error(
                where, "question_type", f"unknown question_type {qtype!r}; expected one of {sorted(LONGMEMEVAL_TYPES)}"
            )
        question, answer, answer_sids, list_n = self.qa(rec, where)
        qdate = self.typed(rec, "question_date", str, "a string", where)
        hay, flagged = self.haystack(rec, where)
        wanted: set[int] = set()
        for j, sid in enumerate(answer_sids):
            fld = f"answer_session_ids[0][{j}]" if list_n else f"answer_session_ids[{j}]"
            if not isinstance(sid, str):
                raise self.error(where, fld, f"expected a session id string, found {_kind(sid)}")
            if sid not in hay.index:
                raise self.error(where, fld, f"session {sid!r} is not in haystack_session_ids")
            wanted.add(hay.index[sid])
        evidence = sorted(hay.offsets[s] + t for s, t in flagged if s in wanted)
        outside = sum(1 for s, _ in flagged if s not in wanted)
        abstention = qid.endswith("_abs")
        if list_n:
            self.list_form += 1
            self.issues.append(
                LoadIssue(
                    self.file,
                    where,
                    "questions/answers/answer_session_ids",
                    f"third-party list form: {list_n} questions, answers and answer-session lists "
                    "instead of one question",
                    f"used item 0 of {list_n} (third-party list form)",
                )
            )
            if outside:
                problem = (
                    f"item 0 ({question!r}) is not the question the has_answer flags were made for: "
                    f"{outside} flagged turns lie outside its answer sessions {list(answer_sids)} "
                    f"and {len(evidence)} inside"
                )
                if self.bad_evidence == "error":
                    raise self.error(where, "answer_session_ids[0]", problem)
                self.issues.append(LoadIssue(self.file, where, "answer_session_ids[0]", problem, "dropped"))
                self.dropped += 1
                return
        elif outside:
            # Decided at the end: a sessions list shared by several records carries every
            # sharing question's flags, so flags outside one question's sessions are expected.
            self.outside.append(
                (
                    id(rec["haystack_sessions"]),
                    LoadIssue(
                        self.file,
                        where,
                        "haystack_sessions",
                        f"{outside} has_answer turns lie outside answer_session_ids",
                        "ignored (not evidence for this question)",
                    ),
                )
            )
        if not evidence and not abstention:
            self.issues.append(
                LoadIssue(
                    self.file,
                    where,
                    "haystack_sessions",
                    "no has_answer turn inside answer_session_ids",
                    "kept with no evidence positions",
                )
            )
        if hay.history_id is None:
            hay.history_id = qid
        for pos in evidence:
            hay.gold.setdefault(pos, []).append(qid)
        self.questions.append(
            Question(
                id=qid,
                type=qtype,
                text=question,
                answer=answer,
                history_id=hay.history_id,
                query_time=qdate,
                evidence=tuple(evidence),
                abstention=abstention,
                evidence_sessions=tuple(answer_sids),
            )
        )

    def qa(self, rec: dict, where: str) -> tuple[str, str, list, int]:
        """(question, answer, answer_session_ids, N) where N > 0 only for the list form."""
        if "question" not in rec and isinstance(rec.get("questions"), list):
            qs = self.typed(rec, "questions", list, "a list", where)
            ans = self.typed(rec, "answers", list, "a list (third-party list form)", where)
            sids = self.typed(rec, "answer_session_ids", list, "a list of lists (third-party list form)", where)
            for key, value in (("questions", qs), ("answers", ans), ("answer_session_ids", sids)):
                if not value:
                    raise self.error(where, key, "empty list (third-party list form needs item 0)")
            if not isinstance(qs[0], str):
                raise self.error(where, "questions[0]", f"expected a string, found {_kind(qs[0])}")
            if not isinstance(sids[0], list):
                raise self.error(
                    where, "answer_session_ids[0]", f"expected a list of session ids, found {_kind(sids[0])}"
                )
            return qs[0], self.answer(ans[0], where, "answers[0]"), sids[0], len(qs)
        question = self.typed(rec, "question", str, "a string", where)
        if "answer" not in rec:
            raise self.error(where, "answer", "missing")
        sids = self.typed(rec, "answer_session_ids", list, "a list of session ids", where)
        return question, self.answer(rec["answer"], where, "answer"), sids, 0

    def answer(self, value: object, where: str, fld: str) -> str:
        # Some official answers are JSON numbers (counts, ages): keep them as text.
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise self.error(where, fld, f"expected a string or number, found {_kind(value)}")

    def haystack(self, rec: dict, where: str) -> tuple[_Haystack, list[tuple[int, int]]]:
        """The record's haystack and its has_answer (session, turn) pairs."""
        sids = self.typed(rec, "haystack_session_ids", list, "a list of session ids", where)
        dates = self.typed(rec, "haystack_dates", list, "a list of date strings", where)
        sessions = self.typed(rec, "haystack_sessions", list, "a list of sessions", where)
        if not len(sids) == len(dates) == len(sessions):
            raise self.error(
                where,
                "haystack_session_ids/haystack_dates/haystack_sessions",
                f"lengths differ: {len(sids)} session ids, {len(dates)} dates, {len(sessions)} sessions",
            )
        hay = self.by_obj.get(id(sessions))
        # Fast path: the very same sessions list (the synthetic generator shares one across
        # questions) was validated already, and its has_answer flags are the same objects.
        if hay is not None and hay.sessions is sessions and hay.sids == sids and hay.dates == dates:
            self.shared.add(id(sessions))
            return hay, hay.flagged
        digest = hashlib.blake2b(digest_size=20)
        index: dict[str, int] = {}
        for k, (sid, date) in enumerate(zip(sids, dates)):
            if not isinstance(sid, str):
                raise self.error(where, f"haystack_session_ids[{k}]", f"expected a string, found {_kind(sid)}")
            if not isinstance(date, str):
                raise self.error(where, f"haystack_dates[{k}]", f"expected a string, found {_kind(date)}")
            if sid in index:
                raise self.error(
                    where, f"haystack_session_ids[{k}]", f"duplicate session id {sid!r} (also at index {index[sid]})"
                )
            index[sid] = k
            digest.update(f"\x00S{len(sid)}:{sid}{len(date)}:{date}".encode())
        flagged: list[tuple[int, int]] = []
        offsets: list[int] = []
        n = 0
        for k, session in enumerate(sessions):
            if not isinstance(session, list):
                raise self.error(where, f"haystack_sessions[{k}]", f"expected a list of turns, found {_kind(session)}")
            offsets.append(n)
            n += len(session)
            # One hash update per session (roles, lengths, then the joined contents) keeps
            # 100k-message haystacks fast; the lengths make the join unambiguous.
            roles, contents = [], []
            for t, turn in enumerate(session):
                role = turn.get("role") if type(turn) is dict else None
                content = turn.get("content") if role is not None else None
                if role not in _ROLES or type(content) is not str:
                    raise self._bad_turn(where, k, t, turn)
                flag = turn.get("has_answer", False)
                if flag is not False:
                    if flag is not True:
                        raise self.error(
                            where,
                            f"haystack_sessions[{k}][{t}].has_answer",
                            f"expected true/false, found {_kind(flag)}",
                        )
                    flagged.append((k, t))
                roles.append(role[0])
                contents.append(content)
            digest.update(f"\x00T{''.join(roles)}{[len(c) for c in contents]}".encode())
            digest.update("".join(contents).encode("utf-8", "surrogatepass"))
        key = digest.digest()
        hay = self.by_hash.get(key)
        if hay is None:
            hay = self.by_hash[key] = _Haystack(sessions, sids, dates, offsets, index, flagged)
        if hay.sessions is sessions:
            self.by_obj[id(sessions)] = hay
        return hay, flagged

    def _bad_turn(self, where: str, k: int, t: int, turn: object) -> LoadError:
        """The error for a turn that is not {role: user|assistant, content: str}."""
        if not isinstance(turn, dict):
            return self.error(where, f"haystack_sessions[{k}][{t}]", f"expected an object, found {_kind(turn)}")
        role, content = turn.get("role"), turn.get("content")
        if role not in _ROLES:
            problem = "missing" if "role" not in turn else f"expected 'user' or 'assistant', found {role!r}"
            return self.error(where, f"haystack_sessions[{k}][{t}].role", problem)
        problem = "missing" if "content" not in turn else f"expected a string, found {_kind(content)}"
        return self.error(where, f"haystack_sessions[{k}][{t}].content", problem)

    def dataset(self, name: str, sha256: str) -> Dataset:
        self.issues += [issue for obj, issue in self.outside if obj not in self.shared]
        histories: dict[str, History] = {}
        for hay in self.by_hash.values():
            if hay.history_id is None:
                continue  # only dropped questions used it
            gold = {pos: tuple(qids) for pos, qids in hay.gold.items()}
            messages = []
            for sid, date, session in zip(hay.sids, hay.dates, hay.sessions):
                time = parse_time(date)
                for t, turn in enumerate(session):
                    pos = len(messages)
                    messages.append(
                        Message(pos, f"{sid}#{t}", sid, t, turn["role"], turn["content"], date, time, gold.get(pos, ()))
                    )
            histories[hay.history_id] = History(hay.history_id, tuple(messages))
        if self.list_form:
            warnings.warn(
                f"{self.file}: {self.list_form} records use a third-party list form (questions/answers "
                "lists); used item 0 of each (see Dataset.issues)",
                stacklevel=3,
            )
        if self.dropped:
            warnings.warn(
                f"{self.file}: dropped {self.dropped} records whose item 0 does not match the has_answer "
                "flags (see Dataset.issues)",
                stacklevel=3,
            )
        return Dataset(name, histories, tuple(self.questions), self.file, sha256, tuple(self.issues))


def _not_official(records: object) -> str:
    """Why a top-level value is not the official schema, naming what was found."""
    if isinstance(records, dict):
        found = f"an object with keys {sorted(records)[:8]}"
        data = records.get("data")
        if isinstance(data, list) and data and isinstance(data[0], dict):
            found += f"; its 'data' holds {len(data)} records with fields {sorted(data[0])[:8]}"
            if "conversation" in data[0]:
                found += " (a reformatted copy: one flat 'conversation', no haystack_sessions or has_answer flags)"
    else:
        found = _kind(records)
    return (
        "not the official LongMemEval schema (a top-level list of records with question_id, question_type, "
        "question, answer, haystack_session_ids, haystack_dates, haystack_sessions, answer_session_ids); "
        f"found {found}"
    )


def parse_records(records: list, file: str, name: str, sha256: str = "", *, bad_evidence: str = "warn") -> Dataset:
    """Turn LongMemEval records (the parsed JSON list) into a Dataset; see the module docstring.

    Args:
        records: the file's top-level list.
        file: path or label used in errors and issues (also Dataset.source).
        bad_evidence: "warn" drops a third-party list-form record whose item 0 does not
            match the has_answer flags (with a LoadIssue and a warning); "error" raises.
    """
    if bad_evidence not in ("warn", "error"):
        raise ValueError(f"bad_evidence must be 'warn' or 'error', got {bad_evidence!r}")
    if not isinstance(records, list):
        raise LoadError(str(file), None, None, _not_official(records))
    parser = _Parser(str(file), bad_evidence)
    for i, rec in enumerate(records):
        if isinstance(rec, dict) and i == 0 and "conversation" in rec and "haystack_sessions" not in rec:
            raise LoadError(str(file), "record 0", None, _not_official({"data": records}))
        parser.record(i, rec)
    return parser.dataset(name, sha256)


def _download(public: str, cache_dir: str | Path | None) -> Path:
    """Fetch a public LongMemEval file from the Hugging Face hub (needs the network)."""
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import LocalEntryNotFoundError, RemoteEntryNotFoundError
    except ImportError as e:
        raise ImportError(f"loading {public!r} by name needs huggingface_hub; or pass a local path") from e
    repo, names = HUB_FILES[public]
    for filename in names:
        try:
            return Path(hf_hub_download(repo, filename, repo_type="dataset", cache_dir=cache_dir))
        except RemoteEntryNotFoundError:
            if filename == names[-1]:
                raise
        except (LocalEntryNotFoundError, ConnectionError) as e:
            raise ConnectionError(
                f"cannot reach the Hugging Face hub to fetch {public!r} ({repo}/{filename}) and it is not cached "
                f"(HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE', 'unset')}); download the file "
                "elsewhere and pass its local path"
            ) from e
    raise AssertionError("unreachable")


def load_longmemeval(
    source: str | Path, name: str | None = None, *, bad_evidence: str = "warn", cache_dir: str | Path | None = None
) -> Dataset:
    """Load a LongMemEval JSON file, or a public file by name when online.

    Args:
        source: a local path, or one of HUB_FILES' names (``longmemeval_s``, ...,
            ``longmemeval_oracle_cleaned``), fetched with huggingface_hub.
        name: Dataset.name (default: the public name or the file's stem).
        bad_evidence: see parse_records.
        cache_dir: hub cache directory for a download (default: huggingface_hub's).
    """
    path = Path(source).expanduser()
    if not path.exists():
        if str(source) not in HUB_FILES:
            raise FileNotFoundError(
                f"{source}: no such file, and not a public LongMemEval name ({', '.join(HUB_FILES)})"
            )
        name = name or str(source)
        path = _download(str(source), cache_dir)
    records, sha256 = read_json(path)
    return parse_records(records, str(path), name or path.stem, sha256, bad_evidence=bad_evidence)
