"""Records shared by every stage: frozen dataclasses, no logic beyond lookups.

One form for both benchmarks (LongMemEval, LoCoMo) and the synthetic generator.

>>> m = Message(pos=0, id="s1#0", session_id="s1", turn=0, role="user",
...             text="I moved to Lisbon.", timestamp="2023/05/20 (Sat) 02:21")
>>> m.is_gold_for("q1")
False
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime

# LongMemEval's official question types and the paper's abbreviations (Table 1).
LONGMEMEVAL_TYPES: dict[str, str] = {
    "single-session-user": "SSU",
    "single-session-assistant": "SSA",
    "single-session-preference": "SSP",
    "multi-session": "MS",
    "temporal-reasoning": "TR",
    "knowledge-update": "KU",
}
# LoCoMo's numeric categories, named as in the issue / the paper's LoCoMo table.
LOCOMO_CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}


def type_abbrev(question_type: str) -> str:
    """The paper's abbreviation of a question type (unknown types come back unchanged).

    >>> type_abbrev("knowledge-update"), type_abbrev("multi-hop")
    ('KU', 'multi-hop')
    """
    return LONGMEMEVAL_TYPES.get(question_type, question_type)


@dataclass(frozen=True)
class Message:
    """One verbatim chat message at a fixed position in a history."""

    pos: int  # 0-based position in the history (what the paper's idx() returns)
    id: str  # stable id: LoCoMo dia_id "D3:7", LongMemEval "<session_id>#<turn>"
    session_id: str  # session the message belongs to
    turn: int  # 0-based index within its session
    role: str  # "user"/"assistant" (LongMemEval, synthetic) or the speaker's name (LoCoMo)
    text: str  # verbatim content
    timestamp: str  # session date as written in the source, e.g. "2023/05/20 (Sat) 02:21"
    time: datetime | None = None  # the timestamp parsed, None when unparseable
    gold_for: tuple[str, ...] = ()  # ids of the questions this message is gold evidence for

    def is_gold_for(self, question_id: str) -> bool:
        """Whether this message is gold evidence for the given question."""
        return question_id in self.gold_for

    @property
    def is_gold(self) -> bool:
        """Whether this message is gold evidence for any question of its history."""
        return bool(self.gold_for)


@dataclass(frozen=True)
class History:
    """A user's whole interaction history: messages in chronological order, pos == index."""

    id: str  # history id (LongMemEval: question id or shared-haystack hash; LoCoMo: sample_id)
    messages: tuple[Message, ...]  # messages[i].pos == i
    speakers: tuple[str, ...] = ()  # LoCoMo speaker names (empty for user/assistant data)

    def __len__(self) -> int:
        return len(self.messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    def __getitem__(self, pos: int) -> Message:
        return self.messages[pos]

    @property
    def session_ids(self) -> tuple[str, ...]:
        """Session ids in order of first appearance."""
        return tuple(dict.fromkeys(m.session_id for m in self.messages))


@dataclass(frozen=True)
class Question:
    """A question asked at query time over one history, with its gold evidence."""

    id: str  # LongMemEval question_id; LoCoMo "<sample_id>:q<index>"
    type: str  # official type name (LongMemEval question_type, LoCoMo category name)
    text: str  # the question
    answer: str  # reference answer ("" for LoCoMo adversarial, see adversarial_answer)
    history_id: str  # the History it is asked over
    query_time: str = ""  # when it is asked, as written in the source ("" when unknown)
    evidence: tuple[int, ...] = ()  # positions of gold evidence messages, ascending
    abstention: bool = False  # LongMemEval "_abs": the answer is not in the history
    category: int | None = None  # LoCoMo numeric category (1-5), None elsewhere
    evidence_sessions: tuple[str, ...] = ()  # LongMemEval answer_session_ids
    adversarial_answer: str = ""  # LoCoMo category 5 only
    # LoCoMo loaded with errata (``lazymem.data.locomo``, ``?errata=PATH``); "" = loaded without errata:
    audit: str = ""  # "clean", "wrong_citation", a wrong answer's type ("hallucination", ...) or "unaudited"
    audited_evidence: tuple[int, ...] = ()  # the corrected gold positions (clean: ``evidence``)
    audited_answer: str = ""  # the corrected answer (clean and wrong_citation: ``answer``)

    @property
    def answer_is_wrong(self) -> bool:
        """Whether an erratum says the published answer is wrong (not only its evidence ids)."""
        return self.audit not in ("", "clean", "wrong_citation", "unaudited")

    @property
    def abbrev(self) -> str:
        """The paper's abbreviation of the type (KU, MS, SSA, SSP, SSU, TR)."""
        return type_abbrev(self.type)


@dataclass(frozen=True)
class LoadIssue:
    """A problem found while loading that was repaired or dropped, never silently."""

    file: str  # file it came from
    record: str  # record index or id
    field: str  # field path, e.g. "qa[37].evidence[0]"
    problem: str  # what was wrong
    action: str  # "repaired: D:11:26 -> D11:26" or "dropped"


@dataclass(frozen=True)
class Dataset:
    """Histories and the questions asked over them."""

    name: str  # e.g. "locomo10", "longmemeval_s", "synthetic(messages=1000,seed=0)"
    histories: Mapping[str, History]  # by history id
    questions: tuple[Question, ...]
    source: str = ""  # file path or generator spec
    sha256: str = ""  # of the source file (or of the generated bytes)
    issues: tuple[LoadIssue, ...] = field(default=())  # repairs and drops made while loading
    errata_source: str = ""  # LoCoMo errata file applied (then sha256 = sha256("<data sha256>+<errata sha256>"))
    errata_sha256: str = ""  # of that file

    def history(self, question: Question | str) -> History:
        """The history a question (or question id) is asked over."""
        if isinstance(question, str):
            question = self.question(question)
        return self.histories[question.history_id]

    def question(self, question_id: str) -> Question:
        """A question by id (KeyError names the id and the dataset)."""
        for q in self.questions:
            if q.id == question_id:
                return q
        raise KeyError(f"question {question_id!r} not in dataset {self.name!r}")

    @property
    def n_messages(self) -> int:
        """Total messages over all histories."""
        return sum(len(h) for h in self.histories.values())

    def head(self, n: int) -> Dataset:
        """The first ``n`` questions (all of them when ``n`` is 0) and the histories they need."""
        if n < 0:
            raise ValueError(f"Dataset.head: n must be >= 0 (0 = all), got {n}")
        return self.subset(self.questions[:n]) if n else self

    def subset(self, questions: list[Question] | tuple[Question, ...], name: str | None = None) -> Dataset:
        """A dataset with only these questions and the histories they need."""
        keep = {q.history_id for q in questions}
        return Dataset(
            name=name or self.name,
            histories={h: self.histories[h] for h in self.histories if h in keep},
            questions=tuple(questions),
            source=self.source,
            sha256=self.sha256,
            issues=self.issues,
            errata_source=self.errata_source,
            errata_sha256=self.errata_sha256,
        )
