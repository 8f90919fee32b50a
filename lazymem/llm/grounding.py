"""Grounded decoding: item i's ``compressed_content`` can only be a verbatim span of text i.

``Sampling.grounded`` carries one text per decision (a window's messages, in decision order).
A *span* here is a substring that starts where a word starts (the text's start, or a
non-space character after whitespace), written as JSON writes it (``json.dumps`` escapes,
without the quotes). The backends enforce it two ways, both from this module:

- ``grounded_gbnf``: a llama.cpp grammar of the whole output: (the ``<think>`` trace,) then an
  array of exactly ``len(texts)`` decision objects whose KEEP content is a word-level span of
  its text (start at any word, continue word by word, stop after any word). Size is linear in
  the texts' lengths: one rule per word.
- ``SpanTokens.allowed``: a transformers logits processor's mask. ``JsonScan`` follows the
  output character by character; while it is inside item i's content string, only tokens that
  keep the written content a prefix of a span of text i are allowed, or a token that closes the
  string after a whole span (a KEEP's content may not be empty). This one stops at any
  character, so it is finer than the grammar's word steps; both give spans.

>>> print(spans_gbnf_rule("m0", "Hey Sam,  hi"))
m0 ::= m0-0 | m0-1 | m0-2
m0-0 ::= "Hey" (" " m0-1)?
m0-1 ::= "Sam," ("  " m0-2)?
m0-2 ::= "hi"
>>> s = JsonScan().feed('[{"op": "KEEP", "compressed_content": "Moved to')
>>> (s.item, s.content, s.op)
(0, 'Moved to', 'KEEP')
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from lazymem.prompts import TRACE_LINE_CHARS

CONTENT_KEY = "compressed_content"
_WORD = re.compile(r"\S+")
# JSON string characters (llama.cpp's own json-schema-to-grammar rule) and optional whitespace.
_COMMON_RULES = (
    'char ::= [^"\\\\\\x7F\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])\n'
    'ws ::= | " " | "\\n" [ \\t]{0,20}\n'
)


def escaped(text: str) -> str:
    """``text`` as it is written inside a JSON string (no surrounding quotes).

    >>> escaped('a "b"\\\\ é')
    'a \\\\"b\\\\"\\\\\\\\ é'
    """
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _gbnf_literal(s: str) -> str:
    return (
        '"'
        + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
        + '"'
    )


def spans_gbnf_rule(name: str, text: str) -> str:
    """GBNF rule ``name``: any word-level span of ``text`` (JSON-escaped), one rule per word."""
    words = list(_WORD.finditer(text))
    if not words:
        raise ValueError(f"grounded text {text!r} has no word to keep")
    lines = [f"{name} ::= " + " | ".join(f"{name}-{j}" for j in range(len(words)))]
    for j, m in enumerate(words):
        lit = _gbnf_literal(escaped(m.group()))
        if j + 1 < len(words):
            gap = _gbnf_literal(escaped(text[m.end() : words[j + 1].start()]))
            lit += f" ({gap} {name}-{j + 1})?"
        lines.append(f"{name}-{j} ::= {lit}")
    return "\n".join(lines)


# The numbered lines of a ``<think>`` trace (``decision_schema(n, think=True)``), as llama.cpp grammars write them.
TRACE_LINE_RULE = f'trace-line ::= [0-9] [0-9]? [0-9]? ". " [^\\n]{{1,{TRACE_LINE_CHARS}}} "\\n"'


def trace_head(lines: int) -> str:
    """The GBNF of a trace of exactly ``lines`` numbered lines (uses ``TRACE_LINE_RULE``'s ``trace-line``)."""
    return '"<think>\\n" ' + " ".join(["trace-line"] * int(lines)) + ' "</think>\\n"'


def grounded_gbnf(
    texts: Sequence[str],
    think_lines: int | None = None,
    free_think: bool = False,
    max_reason: int | None = None,
    ops: Sequence[str | None] | None = None,
) -> str:
    """A llama.cpp grammar: exactly ``len(texts)`` decisions, KEEP content a span of its text.

    Args:
        think_lines: a ``<think>`` trace of exactly this many numbered lines first (as
            ``decision_schema(n, think=True)`` asks).
        free_think: otherwise, an optional ``<think>...</think>`` of free text (without ``<``) first.
        max_reason: most characters of each ``reason`` (None: unbounded).
        ops: item i's op fixed to ``ops[i]`` ("KEEP" or "DROP"; None leaves it open), as a trace decided
            it (llama.cpp's trace-following second pass). A KEEP of a text without a word is impossible,
            so there the item is DROP.
    """
    if ops is not None and len(ops) != len(texts):
        raise ValueError(f"grounded_gbnf: {len(ops)} ops for {len(texts)} texts")
    head = ""
    if think_lines is not None:
        head = trace_head(think_lines) + " "
    elif free_think:
        head = '("<think>" [^<]* "</think>" ws)? '
    items = ' ws "," ws '.join(f"item-{i}" for i in range(len(texts)))
    rules = [f'root ::= {head}"[" ws {items} ws "]"' if texts else f'root ::= {head}"[" ws "]"']
    key = '"\\"compressed_content\\"" ws ":" ws'
    drop = f'"\\"DROP\\"" ws "," ws {key} "\\"\\""'
    for i, text in enumerate(texts):
        keep = f'"\\"KEEP\\"" ws "," ws {key} "\\"" span-{i} "\\""'
        fixed = ops[i] if ops is not None else None
        if not _WORD.search(text) or fixed == "DROP":
            choice = f"({drop})"
        else:
            choice = f"({keep})" if fixed == "KEEP" else f"({keep} | {drop})"
        rules.append(
            f'item-{i} ::= "{{" ws "\\"op\\"" ws ":" ws {choice} ws "," ws "\\"reason\\"" ws ":" ws reason ws "}}"'
        )
        if keep in choice:
            rules.append(spans_gbnf_rule(f"span-{i}", text))
    reps = "char*" if max_reason is None else f"char{{0,{int(max_reason)}}}"
    rules.append(f'reason ::= "\\"" {reps} "\\""')
    if think_lines is not None:
        rules.append(TRACE_LINE_RULE)
    return "\n".join(rules) + "\n" + _COMMON_RULES


@dataclass
class SpanText:
    """One text's spans in JSON-escaped form: where spans may start and where they may end."""

    text: str
    esc: str = ""  # escaped(text)
    starts: tuple[int, ...] = ()  # offsets in esc where a word starts
    ends: frozenset = frozenset()  # offsets in esc that end a whole character

    def __post_init__(self):
        parts = [escaped(c) for c in self.text]
        offsets, n = [], 0
        for p in parts:
            offsets.append(n)
            n += len(p)
        self.esc = "".join(parts)
        self.starts = tuple(offsets[m.start()] for m in _WORD.finditer(self.text))
        self.ends = frozenset(offsets + [n])

    def at(self, written: str) -> list[int]:
        """Offsets in ``esc`` where ``written`` ends, for every span start it matches."""
        return [s + len(written) for s in self.starts if self.esc.startswith(written, s)]


@dataclass
class JsonScan:
    """Follows a decision array as it is written: which item, which key, inside which string.

    ``feed`` text in order (a leading ``<think>...</think>`` is skipped); ``content`` is the
    content written so far while inside item ``item``'s ``compressed_content`` string, else None.
    """

    pre: str = ""  # text before the array starts (think trace, prose)
    started: bool = False
    closed: bool = False
    stack: list = field(default_factory=list)
    item: int = -1  # index of the current decision object
    key: str | None = None  # the current object's last key
    op: str | None = None  # the current object's op value
    expect_key: bool = False
    in_str: bool = False
    esc: bool = False
    role: str = ""  # "key" or "value" of the open string
    buf: list = field(default_factory=list)  # the open string's raw characters
    value_done: bool = False
    closed_content: list = field(default_factory=list)  # (item, raw content) of each closed content string

    def copy(self) -> JsonScan:
        return JsonScan(
            self.pre,
            self.started,
            self.closed,
            list(self.stack),
            self.item,
            self.key,
            self.op,
            self.expect_key,
            self.in_str,
            self.esc,
            self.role,
            list(self.buf),
            self.value_done,
            list(self.closed_content),
        )

    @property
    def in_item(self) -> bool:
        return len(self.stack) == 2 and self.stack[0] == "[" and self.stack[1] == "{"

    @property
    def content(self) -> str | None:
        if self.in_str and self.role == "value" and self.in_item and self.key == CONTENT_KEY:
            return "".join(self.buf)
        return None

    @property
    def near_content(self) -> bool:
        """The next token may open a content string (after its key, or inside that key)."""
        if not self.in_item:
            return False
        if self.in_str:
            return self.role == "key" and CONTENT_KEY.startswith("".join(self.buf))
        return self.key == CONTENT_KEY and not self.value_done

    def feed(self, text: str) -> JsonScan:
        for c in text:
            if self.closed:
                break
            if not self.started:
                self.pre += c
                think = self.pre.lstrip().startswith("<think>") or "<think>".startswith(self.pre.lstrip())
                if c == "[" and (not think or "</think>" in self.pre):
                    self.started, self.stack = True, ["["]
                continue
            if self.in_str:
                if self.esc:
                    self.esc = False
                elif c == "\\":
                    self.esc = True
                elif c == '"':
                    self._close_string()
                    continue
                self.buf.append(c)
                continue
            if c == '"':
                self.in_str, self.buf = True, []
                self.role = "key" if self.stack[-1:] == ["{"] and self.expect_key else "value"
            elif c in "[{":
                self.stack.append(c)
                self.expect_key = c == "{"
                if c == "{" and self.in_item:
                    self.item, self.key, self.op = self.item + 1, None, None
            elif c in "]}":
                if self.stack:
                    self.stack.pop()
                self.closed = not self.stack
            elif c == ":" and self.stack[-1:] == ["{"]:
                self.expect_key = False
            elif c == "," and self.stack[-1:] == ["{"]:
                self.expect_key, self.key = True, None
        return self

    def _close_string(self) -> None:
        value = "".join(self.buf)
        self.in_str = False
        if self.role == "key":
            self.key, self.value_done = value, False
            return
        self.value_done = True
        if self.in_item and self.key == "op":
            self.op = value
        elif self.in_item and self.key == CONTENT_KEY:
            self.closed_content.append((self.item, value))


class SpanTokens:
    """A tokenizer's vocabulary indexed for grounded masking (token texts as the model writes them)."""

    def __init__(self, texts: Sequence[str]):
        self.texts = list(texts)
        self.by_text: dict[str, list[int]] = {}
        self.by_prequote: dict[str, list[int]] = {}  # text before the first quote -> tokens holding a quote
        self.quoted: list[int] = []
        for i, t in enumerate(self.texts):
            if not t:
                continue
            self.by_text.setdefault(t, []).append(i)
            if '"' in t:
                self.by_prequote.setdefault(t[: t.index('"')], []).append(i)
                self.quoted.append(i)
        self.max_len = max((len(t) for t in self.texts), default=1)

    def inside(self, span: SpanText, written: str, keep: bool) -> set[int]:
        """Tokens allowed inside a content string holding ``written``: a longer span, or its close."""
        out: set[int] = set()
        for end in span.at(written):
            rest = span.esc[end : end + self.max_len]
            for n in range(1, len(rest) + 1):
                out.update(self.by_text.get(rest[:n], ()))
            for n in range(len(rest) + 1):
                if end + n in span.ends and (written or n or not keep):
                    out.update(self.by_prequote.get(rest[:n], ()))
        if not written and not keep:
            out.update(self.by_prequote.get("", ()))  # a DROP's (or an undecided item's) empty content
        return out

    def allowed(self, scan: JsonScan, spans: Sequence[SpanText]) -> set[int] | None:
        """Inside item i's content string: the tokens allowed next; else None (no restriction)."""
        written = scan.content
        if written is None or scan.item >= len(spans):
            return None
        return self.inside(spans[scan.item], written, scan.op == "KEEP")

    def banned(self, scan: JsonScan, spans: Sequence[SpanText]) -> set[int]:
        """Where a token could open a content string (``scan.near_content``): the quoted tokens that
        would start it with something that is no span, or close it on one that is not whole."""
        if not scan.near_content:
            return set()
        return {t for t in self.quoted if not self._opens_well(scan, spans, self.texts[t])}

    @staticmethod
    def _opens_well(scan: JsonScan, spans: Sequence[SpanText], token: str) -> bool:
        after = scan.copy().feed(token)
        for item, value in after.closed_content[len(scan.closed_content) :]:
            if item < len(spans) and value and not any(e in spans[item].ends for e in spans[item].at(value)):
                return False
            if item < len(spans) and not value and after.op == "KEEP":
                return False
        written = after.content
        return written is None or after.item >= len(spans) or bool(spans[after.item].at(written))
