"""Load LoCoMo (``locomo10.json``) into the shared records.

One History per sample (id = ``sample_id``), sessions in numeric order (session_2 before
session_10), one Message per turn: id = ``dia_id``, role = the speaker's name, timestamp =
the session's ``session_N_date_time`` ("1:56 pm on 8 May, 2023"). Choices made here:

- Photo turns: with ``captions=True`` (default) the BLIP caption is appended to the text as
  ``" [shares a photo of ...]"`` (every caption starts "a photo of"/"a photography of"),
  because the official LoCoMo evaluation shows it to the model ("... and shared <caption>.")
  and some gold evidence lies only in the photo. ``captions=False`` gives the bare text,
  as in the LazyMem paper's prompt figure.
- ``query_time`` = the date of the sample's last session (LoCoMo gives no question dates;
  every question is asked after the whole conversation).
- Answers that are JSON numbers become text. Category 5 (adversarial) questions have
  ``adversarial_answer`` and normally no ``answer`` (-> ""); two conv-26 ones carry both,
  and both are kept as given.
- Evidence ids: format quirks in the real file ("D8:6; D9:17", "D9:1 D4:4 D4:6",
  "D:11:26", "D30:05") are repaired deterministically and recorded as LoadIssues; ids that
  point to no turn ("D10:19" in conv-42) are dropped with a LoadIssue and one warning
  (``bad_evidence="warn"``) or raise LoadError (``"error"``).
- ``session_N_date_time`` keys without a session (conv-26 has 16) are ignored, with one
  LoadIssue per sample.
- Errata (``errata=PATH``; as a dataset spec ``locomo10.json#paper?errata=PATH``): a JSON list of
  objects ``{question_id, question, error_type, correct_evidence, correct_answer, ...}`` as in the
  independent LoCoMo audit, ``question_id`` = ``locomo_<sample index>_qa<index in the sample's full
  qa list>``. Every question then carries ``audit``: "clean", "wrong_citation" (the answer is
  right, the evidence ids are not), the wrong answer's type in lower case ("hallucination",
  "temporal_error", "attribution_error", "ambiguous", "incomplete"), or "unaudited" (category 5,
  which the audit does not cover); ``audited_evidence``: the corrected ids as positions (clean:
  the published evidence); ``audited_answer``: ``correct_answer`` for a wrong answer, else the
  published answer (a wrong citation's ``correct_answer`` may carry a remark such as "(answer is
  correct, citation is wrong)"). Every erratum is checked against the whole file, whatever the
  subset: its question text must equal the question at its id and its evidence ids must name
  turns (a LoadError naming the errata file, the erratum and the field otherwise). The published
  ``evidence``, ``answer`` and ``gold_for`` stay as they are; ``Dataset.sha256`` becomes
  ``sha256("<data sha256>+<errata sha256>")`` (runs with errata are other runs) and
  ``Dataset.errata_source`` / ``errata_sha256`` name the file; without errata nothing changes.

>>> repair_evidence_id("D:11:26"), repair_evidence_id("D8:6; D9:17"), repair_evidence_id("D")
(['D11:26'], ['D8:6', 'D9:17'], None)
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from lazymem.errors import ConfigError, LoadError
from lazymem.files import read_json
from lazymem.records import LOCOMO_CATEGORIES, Dataset, History, LoadIssue, Message, Question

# Named subsets: sample ids (None = all) and categories. "paper" = the LazyMem paper's LoCoMo
# test set: categories 1-4 of the last two conversations (156 + 158 = 314 questions).
SUBSETS: dict[str, tuple[tuple[str, ...] | None, tuple[int, ...]]] = {
    "full": (None, (1, 2, 3, 4, 5)),
    "paper": (("conv-49", "conv-50"), (1, 2, 3, 4)),
}
_SESSION = re.compile(r"session_(\d+)")
_ID = re.compile(r"D:?(\d+):(\d+)")
_ERRATUM_ID = re.compile(r"locomo_(\d+)_qa(\d+)")
# the audit's error types -> a question's ``audit``; every type but WRONG_CITATION says the answer is wrong
ERROR_TYPES: dict[str, str] = {
    "WRONG_CITATION": "wrong_citation",
    "HALLUCINATION": "hallucination",
    "TEMPORAL_ERROR": "temporal_error",
    "ATTRIBUTION_ERROR": "attribution_error",
    "AMBIGUOUS": "ambiguous",
    "INCOMPLETE": "incomplete",
}


@lru_cache(maxsize=4096)
def parse_time(stamp: str) -> datetime | None:
    """Parse a LoCoMo session date ("1:56 pm on 8 May, 2023"); None when it does not parse.

    >>> parse_time("1:56 pm on 8 May, 2023"), parse_time("soon")
    (datetime.datetime(2023, 5, 8, 13, 56), None)
    """
    try:
        return datetime.strptime(stamp, "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None


def repair_evidence_id(raw: str) -> list[str] | None:
    """Split and normalise an evidence string into dia_ids; None when a part is not an id.

    >>> repair_evidence_id("D30:05"), repair_evidence_id("D9:1 D4:4")
    (['D30:5'], ['D9:1', 'D4:4'])
    """
    parts = [p for p in re.split(r"[;,\s]+", raw) if p]
    ids = []
    for part in parts:
        m = _ID.fullmatch(part)
        if m is None:
            return None
        ids.append(f"D{int(m[1])}:{int(m[2])}")
    return ids or None


def _kind(value: object) -> str:
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


def _text(value: object) -> str | None:
    """A string, or a JSON number as text; None for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


@dataclass(frozen=True)
class Erratum:
    """One checked erratum: the question's audit status, corrected dia_ids and corrected answer."""

    audit: str  # a value of ERROR_TYPES
    evidence: tuple[str, ...]  # corrected dia_ids, as in the file (each names a turn of the sample)
    answer: str | None  # corrected answer; None when the published one stands (wrong_citation)


def _dia_ids(sample: object) -> set[str]:
    """The dia_ids of a raw LoCoMo sample's turns (whatever else is wrong with it is the loader's to say)."""
    conv = sample.get("conversation") if isinstance(sample, dict) else None
    if not isinstance(conv, dict):
        return set()
    return {
        t["dia_id"]
        for key, turns in conv.items()
        if _SESSION.fullmatch(key) and isinstance(turns, list)
        for t in turns
        if isinstance(t, dict) and isinstance(t.get("dia_id"), str)
    }


def check_errata(errata: object, samples: list, file: str) -> dict[tuple[int, int], Erratum]:
    """Errata keyed by (sample index, qa index), each checked against the LoCoMo samples.

    Raises LoadError naming the errata ``file``, the erratum and the field when an erratum is not
    an object, its ``question_id`` is malformed, repeated or points to no question, its
    ``question`` differs from the question there, its ``error_type`` is unknown, or one of its
    ``correct_evidence`` ids names no turn of the sample.

    >>> samples = [{"sample_id": "s", "conversation": {"session_1": [{"dia_id": "D1:1"}, {"dia_id": "D1:2"}]},
    ...             "qa": [{"question": "Where?", "answer": "Rome"}]}]
    >>> e = {"question_id": "locomo_0_qa0", "question": "Where?", "error_type": "HALLUCINATION",
    ...      "correct_evidence": ["D1:2"], "correct_answer": "Paris"}
    >>> check_errata([e], samples, "errata.json")
    {(0, 0): Erratum(audit='hallucination', evidence=('D1:2',), answer='Paris')}
    >>> check_errata([dict(e, question="When?")], samples, "errata.json")
    Traceback (most recent call last):
    ...
    lazymem.errors.LoadError: errata.json: erratum locomo_0_qa0 (index 0), field question: 'When?' is not the question at that id ('Where?')
    """  # noqa: E501  (a doctest's expected output is one line)
    if not isinstance(errata, list):
        raise LoadError(file, None, None, f"expected a list of errata, found {_kind(errata)}")
    out: dict[tuple[int, int], Erratum] = {}
    for k, item in enumerate(errata):
        if not isinstance(item, dict):
            raise LoadError(file, f"erratum {k}", None, f"expected an object, found {_kind(item)}")
        qid = item.get("question_id")
        m = _ERRATUM_ID.fullmatch(qid) if isinstance(qid, str) else None
        if m is None:
            raise LoadError(file, f"erratum {k}", "question_id", f"expected 'locomo_<sample>_qa<index>', found {qid!r}")
        where, key = f"erratum {qid} (index {k})", (int(m[1]), int(m[2]))
        if key in out:
            raise LoadError(file, where, "question_id", f"{qid!r} appears twice")
        sample = samples[key[0]] if key[0] < len(samples) else None
        qa = sample.get("qa") if isinstance(sample, dict) else None
        if not isinstance(qa, list) or key[1] >= len(qa) or not isinstance(qa[key[1]], dict):
            raise LoadError(file, where, "question_id", f"no such question ({len(samples)} samples in the data)")
        asked = qa[key[1]].get("question")
        if item.get("question") != asked:
            raise LoadError(
                file, where, "question", f"{item.get('question')!r} is not the question at that id ({asked!r})"
            )
        kind = item.get("error_type")
        if kind not in ERROR_TYPES:
            raise LoadError(file, where, "error_type", f"expected one of {', '.join(ERROR_TYPES)}, found {kind!r}")
        evidence = item.get("correct_evidence")
        if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
            raise LoadError(file, where, "correct_evidence", f"expected a list of dia_ids, found {_kind(evidence)}")
        turns = _dia_ids(sample)
        for e, ref in enumerate(evidence):
            if ref not in turns:
                raise LoadError(
                    file, where, f"correct_evidence[{e}]", f"{ref!r} names no turn of {sample.get('sample_id')}"
                )
        answer = _text(item.get("correct_answer"))
        if kind != "WRONG_CITATION" and answer is None:
            raise LoadError(file, where, "correct_answer", "missing or not a string (a wrong answer needs it)")
        audit = ERROR_TYPES[kind]
        out[key] = Erratum(audit, tuple(evidence), None if audit == "wrong_citation" else answer)
    return out


def errata_sha256(data_sha256: str, errata_sha: str) -> str:
    """A dataset's sha256 with errata applied: of ``"<data sha256>+<errata sha256>"``.

    >>> errata_sha256("a" * 64, "b" * 64)[:12]
    '76f79efda453'
    """
    return hashlib.sha256(f"{data_sha256}+{errata_sha}".encode()).hexdigest()


class _Loader:
    """Parses samples of one file, collecting issues."""

    def __init__(self, file: str, bad_evidence: str, captions: bool):
        self.file, self.bad_evidence, self.captions = file, bad_evidence, captions
        self.issues: list[LoadIssue] = []
        self.dropped = 0

    def error(self, record: str | None, fld: str | None, problem: str) -> LoadError:
        return LoadError(self.file, record, fld, problem)

    def get(self, obj: dict, key: str, types: type, what: str, where: str, fld: str):
        """obj[key] when it has one of `types`; else LoadError saying missing / what was found."""
        value = obj.get(key)
        if not isinstance(value, types) or isinstance(value, bool):
            raise self.error(where, fld, "missing" if key not in obj else f"expected {what}, found {_kind(value)}")
        return value

    def messages(self, sample: dict, where: str) -> tuple[list[Message], tuple[str, str], str]:
        """The sample's messages (gold_for still empty), speakers, and the date of its last session."""
        conv = self.get(sample, "conversation", dict, "an object", where, "conversation")
        speakers = [self.get(conv, k, str, "a string", where, f"conversation.{k}") for k in ("speaker_a", "speaker_b")]
        numbers = sorted(int(m[1]) for key in conv if (m := _SESSION.fullmatch(key)))
        if not numbers:
            raise self.error(where, "conversation", "no session_N lists")
        orphans = sorted(
            (k for k in conv if k.endswith("_date_time") and k[: -len("_date_time")] not in conv),
            key=lambda k: int(re.sub(r"\D", "", k) or 0),
        )
        if orphans:
            self.issues.append(
                LoadIssue(
                    self.file,
                    where,
                    "conversation",
                    f"{len(orphans)} date_time keys without a session ({orphans[0]} .. {orphans[-1]})",
                    "ignored",
                )
            )
        messages: list[Message] = []
        seen: dict[str, str] = {}
        date = ""
        for n in numbers:
            key = f"session_{n}"
            turns = self.get(conv, key, list, "a list of turns", where, f"conversation.{key}")
            date = self.get(conv, f"{key}_date_time", str, "a string", where, f"conversation.{key}_date_time")
            time = parse_time(date)
            for t, turn in enumerate(turns):
                fld = f"conversation.{key}[{t}]"
                if not isinstance(turn, dict):
                    raise self.error(where, fld, f"expected an object, found {_kind(turn)}")
                speaker, dia_id, text = (
                    self.get(turn, k, str, "a string", where, f"{fld}.{k}") for k in ("speaker", "dia_id", "text")
                )
                if dia_id in seen:
                    raise self.error(where, f"{fld}.dia_id", f"duplicate dia_id {dia_id!r} (also {seen[dia_id]})")
                seen[dia_id] = fld
                caption = turn.get("blip_caption")
                if self.captions and isinstance(caption, str) and caption:
                    text = f"{text} [shares {caption}]"
                messages.append(Message(len(messages), dia_id, key, t, speaker, text, date, time))
        return messages, (speakers[0], speakers[1]), date

    def evidence(self, raw: list, index: dict[str, int], where: str, j: int) -> tuple[int, ...]:
        """Positions of a question's evidence ids, repairing or dropping bad ones."""
        positions = set()
        for e, ref in enumerate(raw):
            fld = f"qa[{j}].evidence[{e}]"
            if not isinstance(ref, str):
                raise self.error(where, fld, f"expected a dia_id string, found {_kind(ref)}")
            if ref in index:
                positions.add(index[ref])
                continue
            ids = repair_evidence_id(ref) or []
            found = [i for i in ids if i in index]
            missing = [i for i in ids if i not in index] if ids else [ref]
            if missing:
                problem = f"evidence id {ref!r} points to no turn"
                problem += f" ({', '.join(missing)} not found)" if ids else ""
                if self.bad_evidence == "error":
                    raise self.error(where, fld, problem)
                action = f"dropped {missing!r}" if found else "dropped"
                self.issues.append(LoadIssue(self.file, where, fld, problem, action))
                self.dropped += 1
            if found:
                self.issues.append(
                    LoadIssue(
                        self.file, where, fld, f"malformed evidence id {ref!r}", f"repaired: {ref!r} -> {found!r}"
                    )
                )
                positions.update(index[i] for i in found)
        return tuple(sorted(positions))

    def questions(
        self,
        sample: dict,
        messages: list[Message],
        last_date: str,
        where: str,
        keep: set[int],
        fixes: dict[int, Erratum] | None = None,
    ) -> list[Question]:
        """The sample's questions of the kept categories; ``fixes`` (qa index -> Erratum; None: no
        errata) sets their audit fields."""
        qa = self.get(sample, "qa", list, "a list", where, "qa")
        index = {m.id: m.pos for m in messages}
        sid = sample["sample_id"]
        out = []
        for j, item in enumerate(qa):
            if not isinstance(item, dict):
                raise self.error(where, f"qa[{j}]", f"expected an object, found {_kind(item)}")
            cat = item.get("category")
            if type(cat) is not int or cat not in LOCOMO_CATEGORIES:
                raise self.error(
                    where, f"qa[{j}].category", "missing" if cat is None else f"expected one of 1-5, found {cat!r}"
                )
            if cat not in keep:
                continue
            text = self.get(item, "question", str, "a string", where, f"qa[{j}].question")
            answer, adversarial = _text(item.get("answer", "")), ""
            if answer is None:
                raise self.error(
                    where, f"qa[{j}].answer", f"expected a string or number, found {_kind(item['answer'])}"
                )
            if cat == 5:
                adversarial = _text(item.get("adversarial_answer"))
                if adversarial is None:
                    raise self.error(
                        where, f"qa[{j}].adversarial_answer", "missing or not a string (category 5 needs it)"
                    )
            elif "answer" not in item:
                raise self.error(where, f"qa[{j}].answer", "missing")
            raw = item.get("evidence", [])
            if not isinstance(raw, list):
                raise self.error(where, f"qa[{j}].evidence", f"expected a list of dia_ids, found {_kind(raw)}")
            q = Question(
                id=f"{sid}:q{j}",
                type=LOCOMO_CATEGORIES[cat],
                text=text,
                answer=answer,
                history_id=sid,
                query_time=last_date,
                evidence=self.evidence(raw, index, where, j),
                category=cat,
                adversarial_answer=adversarial,
            )
            out.append(q if fixes is None else audited(q, fixes.get(j), index))
        return out


def audited(question: Question, erratum: Erratum | None, index: dict[str, int]) -> Question:
    """The question with its audit fields: clean (no erratum; "unaudited" for category 5), or the
    erratum's status, corrected evidence (dia_ids -> positions by ``index``) and corrected answer."""
    if erratum is None:
        status = "unaudited" if question.category == 5 else "clean"
        return replace(question, audit=status, audited_evidence=question.evidence, audited_answer=question.answer)
    return replace(
        question,
        audit=erratum.audit,
        audited_evidence=tuple(sorted({index[e] for e in erratum.evidence})),
        audited_answer=question.answer if erratum.answer is None else erratum.answer,
    )


def load_locomo(
    path: str | Path,
    subset: str | None = None,
    categories: Iterable[int] | None = None,
    bad_evidence: str = "warn",
    *,
    captions: bool = True,
    errata: str | Path | None = None,
) -> Dataset:
    """Load ``locomo10.json`` (see the module docstring for the choices made).

    Args:
        path: the file.
        subset: None or "full" (all samples), or "paper" (conv-49 and conv-50, categories 1-4).
        categories: keep only these categories (applied on top of the subset's).
        bad_evidence: "warn" drops evidence ids that point to no turn; "error" raises LoadError.
        captions: append photo captions to the turn text.
        errata: a LoCoMo errata file (see the module docstring): every question gets its audit fields.
    """
    if subset is not None and subset not in SUBSETS:
        raise ConfigError(f"unknown LoCoMo subset {subset!r}; valid: None, {', '.join(map(repr, SUBSETS))}")
    if bad_evidence not in ("warn", "error"):
        raise ValueError(f"bad_evidence must be 'warn' or 'error', got {bad_evidence!r}")
    sample_ids, keep = SUBSETS[subset or "full"]
    if categories is not None:
        wanted = set(categories)
        if not wanted <= set(LOCOMO_CATEGORIES):
            raise ValueError(
                f"unknown LoCoMo categories {sorted(wanted - set(LOCOMO_CATEGORIES))}; "
                f"valid: {sorted(LOCOMO_CATEGORIES)}"
            )
        keep = tuple(c for c in keep if c in wanted)
    path = Path(path).expanduser()
    samples, sha256 = read_json(path)
    name = path.stem if subset in (None, "full") else f"{path.stem}-{subset}"
    fixes: tuple | None = None
    if errata is not None:
        errata_path = Path(errata).expanduser()
        if not errata_path.is_file():
            raise FileNotFoundError(f"no LoCoMo errata file at {str(errata)!r}")
        items, errata_sha = read_json(errata_path)
        fixes = (items, str(errata_path), errata_sha)
    return parse_locomo(
        samples, str(path), name, sha256, sample_ids, keep, bad_evidence, captions=captions, subset=subset, errata=fixes
    )


def parse_locomo(
    samples: object,
    file: str,
    name: str,
    sha256: str = "",
    sample_ids: Iterable[str] | None = None,
    keep: Iterable[int] = (1, 2, 3, 4, 5),
    bad_evidence: str = "warn",
    *,
    captions: bool = True,
    subset: str | None = None,
    errata: tuple[object, str, str] | None = None,
) -> Dataset:
    """LoCoMo samples already in memory (the parsed JSON list) as a Dataset: the in-memory entry
    point ``load_locomo`` and generated LoCoMo-schema data (``lazymem.data.casual``) share.

    Args:
        samples: the file's top-level list.
        file: path or label used in errors and issues (also Dataset.source).
        name, sha256: the Dataset's name and hash.
        sample_ids: only these samples (None = all); each must be present.
        keep: the categories kept.
        errata: (the errata file's parsed list, its path, its sha256), or None: no errata.
    """
    if not isinstance(samples, list):
        raise LoadError(
            file, None, None, f"expected a list of LoCoMo samples (sample_id, conversation, qa), found {_kind(samples)}"
        )
    sample_ids = None if sample_ids is None else tuple(sample_ids)
    fixes = None if errata is None else check_errata(errata[0], samples, errata[1])
    loader = _Loader(file, bad_evidence, captions)
    histories: dict[str, History] = {}
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for i, sample in enumerate(samples):
        if not isinstance(sample, dict):
            raise LoadError(file, f"sample {i}", None, f"expected an object, found {_kind(sample)}")
        sid = sample.get("sample_id")
        if not isinstance(sid, str):
            raise LoadError(
                file, f"sample {i}", "sample_id", "missing" if sid is None else f"expected a string, found {_kind(sid)}"
            )
        where = f"sample {sid} (index {i})"
        if sid in seen:
            raise LoadError(file, where, "sample_id", f"duplicate sample_id {sid!r} (also sample {seen[sid]})")
        seen[sid] = i
        if sample_ids is not None and sid not in sample_ids:
            continue
        messages, speakers, last_date = loader.messages(sample, where)
        mine = None if fixes is None else {j: e for (s, j), e in fixes.items() if s == i}
        asked = loader.questions(sample, messages, last_date, where, set(keep), mine)
        gold: dict[int, list[str]] = {}
        for q in asked:
            for pos in q.evidence:
                gold.setdefault(pos, []).append(q.id)
        for pos, qids in gold.items():
            messages[pos] = replace(messages[pos], gold_for=tuple(qids))
        histories[sid] = History(sid, tuple(messages), speakers)
        questions += asked
    if sample_ids is not None and set(sample_ids) - set(histories):
        raise LoadError(
            file,
            None,
            None,
            f"subset {subset!r} needs samples {list(sample_ids)}; missing {sorted(set(sample_ids) - set(histories))}",
        )
    if loader.dropped:
        warnings.warn(
            f"{file}: dropped {loader.dropped} evidence ids that point to no turn (see Dataset.issues)", stacklevel=2
        )
    if errata is not None:
        return Dataset(
            name,
            histories,
            tuple(questions),
            file,
            errata_sha256(sha256, errata[2]),
            tuple(loader.issues),
            errata_source=errata[1],
            errata_sha256=errata[2],
        )
    return Dataset(name, histories, tuple(questions), file, sha256, tuple(loader.issues))
