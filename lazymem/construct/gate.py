"""Query-time memory construction (paper Section 3.2): gate, merge, assemble.

A memory-processing model reads (query, window) and returns one KEEP/DROP decision per
non-empty message as a JSON array. This module holds everything around that call that
needs no model: the format gate (the validity indicator of Eq. reward), deduplication of
overlapping sub-windows, assembly of the chronological memory, construction statistics,
and a training-free extractive processor behind the same interface as a model.

>>> v = parse_decisions('[{"op": "KEEP", "compressed_content": "Moved to Lisbon.", "reason": "r"},'
...                     ' {"op": "DROP", "compressed_content": "", "reason": "r"}]', [7, 8])
>>> v.ok, [(d.pos, d.op, d.content) for d in v.decisions]
(True, [(7, 'KEEP', 'Moved to Lisbon.'), (8, 'DROP', '')])
>>> parse_decisions('```json\\n[]\\n```', []).reason
'extra_text'
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from lazymem.errors import ConfigError
from lazymem.prompts import decision_positions, memory_line
from lazymem.records import History, Message

OPS = ("KEEP", "DROP")
FIELDS = ("op", "compressed_content", "reason")  # exactly these, per the window-annotation listing
GATE_OK = "ok"
# Why an output failed the gate; GateVerdict.reason is GATE_OK or one of these.
FAILURE_KINDS: tuple[str, ...] = (
    "not_text",  # the output is not a str
    "empty",  # nothing but whitespace
    "truncated",  # JSON that stops mid-value (e.g. generation hit max_tokens)
    "invalid_json",  # not parseable by json.loads for another reason
    "extra_text",  # a JSON value with text before or after it (prose, code fences, two arrays)
    "not_array",  # valid JSON, but not an array
    "wrong_count",  # array length != number of non-empty messages in the window
    "item_not_object",  # an array item is not a JSON object
    "duplicate_field",  # an object repeats a key (json.loads would silently keep the last)
    "missing_field",  # op, compressed_content or reason absent
    "extra_field",  # any other key (an "id" included: decisions are matched by order)
    "bad_op",  # op is not exactly "KEEP" or "DROP"
    "bad_field_type",  # compressed_content or reason is not a string
    "invalid_unicode",  # a string holds a lone surrogate (cannot be written as UTF-8)
    "keep_empty_content",  # KEEP with empty or whitespace-only compressed_content
    "drop_with_content",  # DROP with compressed_content other than ""
)
# Failures that still count for the paper's "Gate Fmt." column: "a parseable JSON decision
# array with exactly one decision per input message" (structure only, not the item schema).
_STRUCTURAL_FAILURES = frozenset(FAILURE_KINDS[:FAILURE_KINDS.index("wrong_count") + 1])


@dataclass(frozen=True)
class Decision:
    """The processor's action for one history message."""

    pos: int  # position of the message in its history
    op: str  # "KEEP" or "DROP"
    content: str  # compressed text for KEEP, "" for DROP
    rationale: str = ""  # the model's "reason" field (kept for inspection only)


@dataclass(frozen=True)
class GateVerdict:
    """The format gate's judgement on one raw output."""

    ok: bool  # passed the gate (o in V)
    reason: str  # GATE_OK or one of FAILURE_KINDS
    decisions: tuple[Decision, ...]  # one per decided position when ok, else ()
    raw: str  # the output as given (str() of it when it was not a str)
    detail: str = ""  # human-readable location of the failure, e.g. "item 3: op 'keep'"


class _Obj(dict):
    """A JSON object that remembers keys it saw twice."""

    dupes: tuple[str, ...] = ()


def _pairs_hook(pairs: list[tuple[str, Any]]) -> _Obj:
    obj = _Obj(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        obj.dupes = tuple(k for k, _ in pairs if k in seen or seen.add(k))
    return obj


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs_hook)
_JSON_WHITESPACE = " \t\n\r"  # str.strip() would also eat e.g. U+00A0, which json.loads rejects
_MAX_PROBES = 8  # '[' positions tried when diagnosing extra text; bounds the work at O(8n)


def _fail(raw: str, reason: str, detail: str = "") -> GateVerdict:
    return GateVerdict(False, reason, (), raw, detail)


def _diagnose_unparseable(text: str, err: Exception) -> tuple[str, str]:
    """Why json.loads refused ``text`` (already stripped): extra text, truncation, or other."""
    starts = [0]
    # Output that opens like JSON failed on its own value; only prose or a fence in front
    # (anything else first) is searched for an array further on. Probing '[' inside a
    # truncated array would find sub-arrays in its strings and misreport "extra_text".
    if text[0] not in "[{":
        i = text.find("[")
        while i != -1 and len(starts) < _MAX_PROBES:
            starts.append(i)
            i = text.find("[", i + 1)
    for start in starts:
        try:
            _, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        where = "before" if start else "after"
        return "extra_text", f"text {where} the JSON value (value spans {start}..{end} of {len(text)})"
    if isinstance(err, RecursionError):
        return "invalid_json", "nested too deeply"
    pos = getattr(err, "pos", -1)
    msg = getattr(err, "msg", str(err))
    if pos >= len(text) or msg.startswith("Unterminated string"):
        return "truncated", f"{msg} at char {pos}"
    return "invalid_json", f"{msg} at char {pos}"


def _encodable(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_decisions(raw: str, window_positions: Sequence[int]) -> GateVerdict:
    """The format gate: accept only a JSON array of exactly one valid decision per position.

    Strictness follows the paper's listing ("Return only the JSON array. Do not output
    markdown ... directly parseable by json.loads()"): whitespace around the array is
    allowed (json.loads allows it), anything else is not, so code fences and prose fail as
    "extra_text". Decisions carry no id; the i-th item decides ``window_positions[i]``. Item
    checks run in order and the first failure is reported. Never raises on any ``raw``.

    Args:
        raw: the processor's output (strip any reasoning trace first, see strip_think).
        window_positions: positions of the window's non-empty messages, ascending
            (``prompts.decision_positions(window_messages)``).

    Raises:
        ValueError: only when ``window_positions`` is not strictly increasing (a caller bug).

    >>> parse_decisions('[{"op": "DROP", "compressed_content": "x", "reason": ""}]', [3]).reason
    'drop_with_content'
    """
    positions = tuple(window_positions)
    if any(b <= a for a, b in zip(positions, positions[1:])):
        raise ValueError(f"window positions must be strictly increasing, got {positions}")
    if not isinstance(raw, str):
        try:
            shown = str(raw)
        except Exception:  # a hostile __str__ must not break the never-raises promise
            shown = f"<{type(raw).__name__}>"
        return _fail(shown, "not_text", type(raw).__name__)
    if not raw.strip():
        return _fail(raw, "empty")
    try:
        value = _DECODER.decode(raw)  # exactly json.loads: only JSON whitespace may surround it
    except (ValueError, RecursionError) as err:
        return _fail(raw, *_diagnose_unparseable(raw.strip(_JSON_WHITESPACE), err))
    if not isinstance(value, list):
        return _fail(raw, "not_array", type(value).__name__)
    if len(value) != len(positions):
        return _fail(raw, "wrong_count", f"{len(value)} decisions for {len(positions)} messages")
    decisions = []
    for i, (item, pos) in enumerate(zip(value, positions)):
        where = f"item {i}"
        if not isinstance(item, dict):
            return _fail(raw, "item_not_object", f"{where}: {type(item).__name__}")
        if getattr(item, "dupes", ()):
            return _fail(raw, "duplicate_field", f"{where}: {item.dupes[0]!r}")
        missing = [f for f in FIELDS if f not in item]
        if missing:
            return _fail(raw, "missing_field", f"{where}: {missing[0]!r}")
        extra = [k for k in item if k not in FIELDS]
        if extra:
            return _fail(raw, "extra_field", f"{where}: {extra[0][:40]!r}")
        op, content, reason = item["op"], item["compressed_content"], item["reason"]
        if op not in OPS:  # also rejects non-strings: no list/dict equals "KEEP"
            return _fail(raw, "bad_op", f"{where}: {str(op)[:40]!r}")
        for name, v in (("compressed_content", content), ("reason", reason)):
            if not isinstance(v, str):
                return _fail(raw, "bad_field_type", f"{where}: {name} is {type(v).__name__}")
            if not _encodable(v):
                return _fail(raw, "invalid_unicode", f"{where}: {name}")
        if op == "KEEP" and not content.strip():
            return _fail(raw, "keep_empty_content", where)
        if op == "DROP" and content != "":
            return _fail(raw, "drop_with_content", where)
        decisions.append(Decision(pos, op, content, reason))
    return GateVerdict(True, GATE_OK, tuple(decisions), raw)


_THINK = re.compile(r"\A\s*<think>.*?</think>", re.DOTALL)


def strip_think(raw: str) -> str:
    """Drop a leading ``<think>...</think>`` reasoning trace (Qwen3 thinking mode).

    The gate itself never strips anything; callers that run a thinking model do this first.

    >>> strip_think("<think>hmm [1]</think>\\n[]")
    '\\n[]'
    """
    return _THINK.sub("", raw, count=1)


def decision_schema(n_messages: int, max_len: int = 512, max_reason_len: int = 128) -> dict:
    """A bounded JSON schema of a valid output, for constrained decoding.

    Exactly ``n_messages`` items; KEEP needs 1..max_len characters of content, DROP forces
    "" (maxLength 0); no other keys. Bounded strings matter: unbounded ones let constrained
    decoding run away. The one gap to the gate: whitespace-only KEEP content satisfies the
    schema but fails the gate (regex "pattern" support differs between grammar engines).

    >>> decision_schema(2)["minItems"], decision_schema(2)["maxItems"]
    (2, 2)
    """
    if n_messages < 0 or max_len < 1 or max_reason_len < 0:
        raise ValueError(f"bad schema bounds: n={n_messages}, max_len={max_len}, max_reason_len={max_reason_len}")
    reason = {"type": "string", "maxLength": max_reason_len}

    def item(op: str, content: dict) -> dict:
        return {"type": "object",
                "properties": {"op": {"const": op}, "compressed_content": content, "reason": reason},
                "required": list(FIELDS), "additionalProperties": False}

    return {
        "type": "array", "minItems": n_messages, "maxItems": n_messages,
        "items": {"anyOf": [item("KEEP", {"type": "string", "minLength": 1, "maxLength": max_len}),
                            item("DROP", {"type": "string", "maxLength": 0})]},
    }


# ---------------------------------------------------------------------------------------
# Merging windows, assembling memory, statistics.
# ---------------------------------------------------------------------------------------
def _window_positions(window: Any) -> tuple[int, ...]:
    """Positions of a window given as positions, messages, or an object with .positions."""
    seq = getattr(window, "positions", window)
    return tuple(getattr(x, "pos", x) for x in seq)


def merge_decisions(window_results: Sequence[tuple[Any, GateVerdict]]) -> dict[int, Decision]:
    """Deduplicate decisions across overlapping sub-windows by position.

    KEEP beats DROP; between equal ops the earlier window (in the given order) wins. A
    window that failed the gate contributes nothing. Returns decisions sorted by position.

    >>> keep = lambda p, c: Decision(p, "KEEP", c)
    >>> a = GateVerdict(True, "ok", (keep(14, "a14"), Decision(15, "DROP", "")), "")
    >>> b = GateVerdict(True, "ok", (keep(15, "b15"), keep(16, "b16")), "")
    >>> [(d.pos, d.content) for d in merge_decisions([([14, 15], a), ([15, 16], b)]).values()]
    [(14, 'a14'), (15, 'b15'), (16, 'b16')]
    """
    merged: dict[int, Decision] = {}
    for _, verdict in window_results:
        if not verdict.ok:
            continue
        for d in verdict.decisions:
            current = merged.get(d.pos)
            if current is None or (current.op == "DROP" and d.op == "KEEP"):
                merged[d.pos] = d
    return dict(sorted(merged.items()))


def assemble_memory(decisions: Mapping[int, Decision] | Iterable[Decision],
                    history: History | Sequence[Message]) -> str:
    """Kept messages, chronologically, one ``[timestamp] role: content`` line each.

    ``history`` must be indexable by position (a History, or its full message list).

    >>> h = [Message(0, "s#0", "s", 0, "user", "I moved to Lisbon in May.", "2023/05/20")]
    >>> assemble_memory([Decision(0, "KEEP", "Moved to Lisbon.")], h)
    '[2023/05/20] user: Moved to Lisbon.'
    """
    items = decisions.values() if isinstance(decisions, Mapping) else decisions
    kept = sorted((d for d in items if d.op == "KEEP"), key=lambda d: d.pos)
    lines = []
    for d in kept:
        m = history[d.pos]
        if m.pos != d.pos:
            raise ValueError(f"history is not indexed by position: item {d.pos} has pos {m.pos}")
        lines.append(memory_line(m.timestamp, m.role, d.content))
    return "\n".join(lines)


@dataclass(frozen=True)
class ConstructionStats:
    """What construction did for one query (sum the counts to aggregate over a dataset)."""

    n_windows: int  # processor calls
    n_valid: int  # outputs that passed the full gate (o in V)
    n_fmt: int  # outputs with a parseable array of the right length (the paper's Gate Fmt.)
    n_messages: int  # distinct positions covered by the windows
    n_decided: int  # distinct positions decided by a valid window
    n_kept: int  # distinct positions kept after merging
    n_gold: int  # gold positions covered by the windows (failed windows included)
    n_gold_kept: int  # of those, kept after merging
    failures: dict[str, int] = field(default_factory=dict)  # failure kind -> count

    @property
    def gate_pass_rate(self) -> float | None:
        """Share of outputs passing the full gate (None without windows)."""
        return self.n_valid / self.n_windows if self.n_windows else None

    @property
    def gate_fmt(self) -> float | None:
        """Share of outputs that are a parseable array of the right length (None without windows)."""
        return self.n_fmt / self.n_windows if self.n_windows else None

    @property
    def gold_keep_recall(self) -> float | None:
        """Gold messages kept / gold messages in windows (None when no gold was in a window)."""
        return self.n_gold_kept / self.n_gold if self.n_gold else None


def construction_stats(window_results: Sequence[tuple[Any, GateVerdict]],
                       gold_positions: Iterable[int] = ()) -> ConstructionStats:
    """Gate pass rate, kept count and gold-keep recall of one query's construction.

    >>> ok = GateVerdict(True, "ok", (Decision(1, "KEEP", "x"), Decision(2, "DROP", "")), "")
    >>> bad = GateVerdict(False, "wrong_count", (), "[]")
    >>> s = construction_stats([([1, 2], ok), ([2, 3], bad)], gold_positions=[1, 3])
    >>> s.gate_pass_rate, s.n_kept, s.gold_keep_recall
    (0.5, 1, 0.5)
    """
    covered: set[int] = set()
    for window, _ in window_results:
        covered.update(_window_positions(window))
    merged = merge_decisions(window_results)
    kept = {p for p, d in merged.items() if d.op == "KEEP"}
    gold = set(gold_positions) & covered
    verdicts = [v for _, v in window_results]
    failures = Counter(v.reason for v in verdicts if not v.ok)
    return ConstructionStats(
        n_windows=len(verdicts),
        n_valid=sum(v.ok for v in verdicts),
        n_fmt=sum(v.ok or v.reason not in _STRUCTURAL_FAILURES for v in verdicts),
        n_messages=len(covered),
        n_decided=len(merged),
        n_kept=len(kept),
        n_gold=len(gold),
        n_gold_kept=len(gold & kept),
        failures=dict(sorted(failures.items())),
    )


# ---------------------------------------------------------------------------------------
# Processors.
# ---------------------------------------------------------------------------------------
class MemoryProcessor(Protocol):
    """Anything that annotates one window: returns the raw output the gate will judge."""

    def process(self, query: str, query_time: str, window_messages: Sequence[Message]) -> str: ...


@dataclass(frozen=True)
class Construction:
    """One query's construction: per-window verdicts, merged decisions, memory text, stats."""

    verdicts: tuple[GateVerdict, ...]  # in window order
    decisions: dict[int, Decision]  # merged, by position
    memory: str  # the assembled m_q
    stats: ConstructionStats


def construct_memory(processor: MemoryProcessor, query: str, query_time: str, windows: Sequence[Any],
                     history: History | Sequence[Message], gold_positions: Iterable[int] = ()) -> Construction:
    """Run a processor over each window (sequentially), gate, merge and assemble.

    ``windows`` are positions, message lists, or objects with ``.positions``. Model-based
    processors that batch calls can do the same with parse_decisions + merge_decisions.
    """
    results = []
    for window in windows:
        messages = [history[p] for p in _window_positions(window)]
        raw = processor.process(query, query_time, messages)
        results.append((window, parse_decisions(raw, decision_positions(messages))))
    merged = merge_decisions(results)
    return Construction(tuple(v for _, v in results), merged, assemble_memory(merged, history),
                        construction_stats(results, gold_positions))


_TOKEN = re.compile(r"[a-z0-9]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# Function words that would otherwise make every message "overlap" with every question.
_STOPWORDS = frozenset(
    "a about after again all also am an and any are as at be been before being but by can could "
    "did do does doing done for from had has have having he her here hers him his how i if in "
    "into is it its just me my myself no not now of on once only or other our ours out over "
    "own same she should so some such than that the their them then there these they this "
    "those to too under until up very was we were what when where which while who whom why "
    "will with would you your yours yourself s t d ll m re ve".split())  # "cat's" -> cat, s


_SUFFIXES = ("ing", "ed", "es", "ly", "s")


def _crude_stem(token: str) -> str:
    """Strip one common suffix and a final "e" (moved/move/moves -> mov): cheap and good
    enough to match inflections for a relevance threshold; not a linguistic stemmer."""
    for suffix in _SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            token = token[: -len(suffix)]
            break
    return token[:-1] if token.endswith("e") and len(token) > 3 else token


def content_tokens(text: str) -> set[str]:
    """Lower-cased alphanumeric tokens, stopwords removed, crudely stemmed.

    >>> sorted(content_tokens("When did I move to Lisbon? I moved!"))
    ['lisbon', 'mov']
    """
    return {_crude_stem(t) for t in _TOKEN.findall(text.lower()) if t not in _STOPWORDS}


def lexical_scores(query: str, texts: Sequence[str]) -> list[float]:
    """Share of the query's content tokens that each text contains, in [0, 1].

    >>> lexical_scores("When did I move to Lisbon?", ["I moved to Lisbon", "Lisbon is sunny"])
    [1.0, 0.5]
    """
    q = content_tokens(query)
    if not q:
        return [0.0 for _ in texts]
    return [len(q & content_tokens(t)) / len(q) for t in texts]


Scorer = Callable[[str, Sequence[str]], Sequence[float]]  # (query, texts) -> one score per text


@dataclass(frozen=True)
class ExtractiveConfig:
    """Settings of the training-free extractive processor."""

    threshold: float = 0.25  # keep a message whose relevance score is at least this
    mode: str = "verbatim"  # "verbatim": keep the whole text; "key_span": keep the best sentence

    def __post_init__(self) -> None:
        if self.mode not in ("verbatim", "key_span"):
            raise ConfigError(f"ExtractiveConfig.mode must be 'verbatim' or 'key_span', got {self.mode!r}")
        if not isinstance(self.threshold, (int, float)) or not math.isfinite(self.threshold):
            raise ConfigError(f"ExtractiveConfig.threshold must be a finite number, got {self.threshold!r}")


class ExtractiveProcessor:
    """Keep messages that score at least a threshold against the query; never rewrites text.

    The scorer defaults to lexical overlap (lexical_scores); pass any ``(query, texts) ->
    scores`` callable, e.g. a dense cosine similarity, with a threshold on its scale. The
    output is always a gate-valid decision array.

    >>> p = ExtractiveProcessor(ExtractiveConfig(threshold=0.5))
    >>> ms = [Message(0, "s#0", "s", 0, "user", "I moved to Lisbon.", "d"),
    ...       Message(1, "s#1", "s", 1, "assistant", "Nice!", "d")]
    >>> [d["op"] for d in json.loads(p.process("Where did I move?", "d", ms))]
    ['KEEP', 'DROP']
    """

    def __init__(self, config: ExtractiveConfig = ExtractiveConfig(), scorer: Scorer | None = None):
        self.config = config
        self.scorer: Scorer = scorer or lexical_scores

    def _key_span(self, query: str, text: str) -> str:
        sentences = [s for s in _SENTENCE.split(text.strip()) if s.strip()]
        if len(sentences) < 2:
            return text
        scores = list(self.scorer(query, sentences))
        best = max(range(len(sentences)), key=lambda i: (scores[i], -i))  # first of the best
        return sentences[best] if scores[best] > 0 else text

    def process(self, query: str, query_time: str, window_messages: Sequence[Message]) -> str:
        """A JSON decision array, one item per non-empty message, in order."""
        messages = [m for m in window_messages if m.text.strip()]
        scores = list(self.scorer(query, [m.text for m in messages]))
        if len(scores) != len(messages):
            raise ValueError(f"scorer returned {len(scores)} scores for {len(messages)} texts")
        out = []
        for m, score in zip(messages, scores):
            if score >= self.config.threshold:
                content = m.text if self.config.mode == "verbatim" else self._key_span(query, m.text)
                out.append({"op": "KEEP", "compressed_content": content, "reason": f"score {score:.3f}"})
            else:
                out.append({"op": "DROP", "compressed_content": "", "reason": f"score {score:.3f}"})
        return json.dumps(out, ensure_ascii=False)
