"""Is a KEEP's content grounded in its message? The "rewritten" statistic of the gate.

A KEEP decision is *grounded* when its ``compressed_content`` is a verbatim span (contiguous
substring) of its own message, up to this normalisation, and *rewritten* otherwise:

- whitespace around the content is ignored, and every run of whitespace (in content and message
  alike) counts as one space (a re-flowed line break is not a rewrite);
- one trailing period the message does not have there is tolerated ("moved to Lisbon." from
  "I moved to Lisbon, then ..."): models close a cut span with one;
- nothing else: case, punctuation, quotes and unicode must match exactly ("Hey Sam" -> "Hey
  Evan" is a rewrite, and so is "Moved" from "moved").

Grounded decoding (``pipeline.grounded``, ``lazymem.llm.grounding``) only writes spans, so
its KEEPs are never rewritten; free generation's can be.

>>> is_span("to Lisbon.", "I moved to Lisbon, then to Porto.")
True
>>> is_span("Hey Evan", "Hey Sam, how are you?")
False
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from lazymem.construct.gate import Decision


def _squash(s: str) -> str:
    return " ".join(s.split())


def is_span(content: str, message: str) -> bool:
    """Whether ``content`` is a verbatim span of ``message`` (see the module docstring).

    >>> is_span("  a  b ", "x a\\nb y"), is_span("", "x"), is_span('say "hi"\\\\', 'I say "hi"\\\\ too')
    (True, False, True)
    """
    c, m = _squash(content), _squash(message)
    if not c:
        return False
    if c in m:
        return True
    return c.endswith(".") and len(c) > 1 and c[:-1] in m


def count_rewritten(decisions: Iterable[Decision], texts: Mapping[int, str]) -> tuple[int, int]:
    """(KEEP decisions, of those rewritten): each KEEP judged against ``texts[decision.pos]``.

    >>> ds = [Decision(0, "KEEP", "Hey Evan"), Decision(1, "KEEP", "ok"), Decision(2, "DROP", "")]
    >>> count_rewritten(ds, {0: "Hey Sam!", 1: "ok then", 2: "bye"})
    (2, 1)
    """
    n_keep = n_rewritten = 0
    for d in decisions:
        if d.op != "KEEP":
            continue
        n_keep += 1
        if d.pos not in texts:
            raise KeyError(f"no message text for decided position {d.pos}")
        n_rewritten += not is_span(d.content, texts[d.pos])
    return n_keep, n_rewritten


def window_query(prompt: Sequence[dict]) -> str:
    """The query of a window prompt (its ``Query:`` line, above the history window).

    >>> text = "# Query\\nQuery Time: t\\nQuery: Where?\\n\\n# History Window\\n{}"
    >>> window_query([{"role": "user", "content": text}])
    'Where?'
    """
    head = prompt[-1]["content"].split("# History Window\n", 1)[0]
    for line in head.splitlines():
        if line.startswith("Query: "):
            return line[len("Query: ") :]
    raise ValueError("the window prompt has no 'Query: ' line above '# History Window'")


def window_texts(prompt: str | Sequence[Mapping[str, str]]) -> tuple[str, ...] | None:
    """The decided messages' texts of a window-annotation prompt, in decision order, read back from
    its window block (previous_bridge, core_messages, next_bridge); None when it has none.

    >>> from lazymem.prompts import annotation_messages
    >>> from lazymem.records import Message
    >>> ms = [Message(i, f"s#{i}", "s", i, "user", t, "2023/05/20") for i, t in enumerate(["a \\"b\\"", " ", "c"])]
    >>> window_texts(annotation_messages(ms, "q?", "2023/06/01", n_prev_bridge=1))
    ('a "b"', 'c')
    """
    content = (
        prompt
        if isinstance(prompt, str)
        else next((m.get("content", "") for m in reversed(list(prompt)) if m.get("role") == "user"), "")
    )
    at = content.rfind('"previous_bridge"')
    start = content.rfind("{", 0, at) if at >= 0 else -1
    if start < 0:
        return None
    try:
        block, _ = json.JSONDecoder().raw_decode(content, start)
        parts = [block[k] for k in ("previous_bridge", "core_messages", "next_bridge")]
        return tuple(m["content"] for part in parts for m in part if m["content"].strip())
    except (ValueError, KeyError, TypeError):
        return None
