"""A scripted OpenAI-compatible server that behaves as the Qwen3 family served by vLLM does.

The paper's configs name models this machine cannot run (Qwen3-32B, LazyMem-4B). A smoke run
(``lazymem eval-table --smoke``) serves every one of them from this server on a loopback port, so
the run goes through the same client path a GPU node uses (``backend: openai``), with what the
real server would do to a request:

- **tokens**: prompt tokens are counted with the real Qwen3 tokenizer and chat template that ship
  here (``enable_thinking`` applied), completion tokens likewise; a request whose prompt plus
  ``max_tokens`` exceeds ``max_model_len`` is refused with HTTP 400 and vLLM's message, as vLLM does;
  ``usage.prompt_tokens_details.cached_tokens`` is the longest prefix a prompt shares with an earlier
  one (a prefix cache that keeps every prompt);
- **thinking**: a reply starts with ``<think> ... </think>`` unless
  ``chat_template_kwargs.enable_thinking`` is false (Qwen3's default is to think); a
  ``thinking_token_budget`` ends the trace at that many tokens; a final assistant message that
  closes its trace is continued (``continue_final_message``): only the answer is written;
- **limits**: ``max_tokens`` cuts the reply (``finish_reason: "length"``), ``stop`` strings cut
  before them;
- **reasoning parser**: with ``reasoning_field`` set (vLLM's ``--reasoning-parser qwen3``:
  ``reasoning``; DeepSeek: ``reasoning_content``), the trace goes to that message field and
  ``content`` holds what follows it (None while the trace never closed).

What a reply says is the family's *behaviour* scripted by the prompt it answers
(``scripted_reply``): a judge gives the verdict the gold answer supports, an MPM writes the
paper's decision array (KEEP for messages that share a content word with the query), NanoMemory's
pruning call returns the lines that share a word, Mem0's extraction call one memory per new user
line, an answerer the first memory line. Nothing here is a model; every count is the tokenizer's.

>>> scripted_reply([{"role": "user", "content": "Question: Where?\\n\\nCorrect Answer: Lisbon\\n\\nModel "
...                  "Response: She moved to Lisbon.\\n\\nIs the model response correct? Answer yes or no only."}])
'yes'
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
QWEN3_MAX_MODEL_LEN = 40960  # vLLM's default max_model_len for Qwen3 (max_position_embeddings)
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a an the and or of to in on at for with by from is are was were be been do does did what when where who whom "
    "which why how i you he she it we they my your his her its our their me him us them this that these those "
    "has have had not no yes any some about as if so than then there here can could would should will".split()
)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 2}


def _between(text: str, start: str, end: str) -> str:
    head, _, rest = text.partition(start)
    return rest.partition(end)[0].strip() if _ else ""


def _supports(gold: str, response: str) -> bool:
    """Whether a response carries the gold answer: every content word of the gold in the response."""
    g = _words(gold)
    return bool(g) and g <= _words(response)


def _judge_longmemeval(prompt: str) -> str:
    gold = (
        _between(prompt, "Correct Answer: ", "\n\nModel Response:")
        or _between(prompt, "Rubric: ", "\n\nModel")
        or _between(prompt, "Explanation: ", "\n\nModel")
    )
    response = _between(prompt, "Model Response: ", "\n\n")
    if "correctly identify the question as unanswerable" in prompt:
        return "yes" if re.search(r"\b(not|no|unknown|don't|cannot|unanswerable)\b", response.lower()) else "no"
    return "yes" if _supports(gold, response) else "no"


def _judge_locomo(prompt: str) -> str:
    prompt = prompt.rpartition("Question: ")[2]  # the real question, after the prompt's worked example
    gold = _between(prompt, "Gold answer: ", "\n")
    response = _between(prompt, "Generated answer: ", "\n")
    return json.dumps({"label": "CORRECT" if _supports(gold, response) else "WRONG"})


def _window_decisions(prompt: str) -> str:
    """The paper's decision array for a window prompt: one item per non-empty message."""
    query = _between(prompt, "Query: ", "\n")
    block = prompt.split("# History Window\n", 1)[1]
    window = json.loads(block)
    want = _words(query)
    out = []
    for part in ("previous_bridge", "core_messages", "next_bridge"):
        for m in window.get(part, []):
            keep = bool(want & _words(m["content"]))
            out.append(
                {
                    "op": "KEEP" if keep else "DROP",
                    "compressed_content": m["content"][:200] if keep else "",
                    "reason": "shares the query's words" if keep else "unrelated to the query",
                }
            )
    return json.dumps(out, ensure_ascii=False)


def _prune(prompt: str) -> str:
    question = _between(prompt, "Question: ", "\n") or prompt[-200:]
    event = _between(prompt, "Fused Historical Event: \n", "\n\n\n")
    want = _words(question)
    lines = [line for line in event.splitlines() if want & _words(line)]
    return "\n".join(lines[:20]) or "No relevant information."


def _mem0_extraction(prompt: str) -> str:
    section = prompt.split("## New Messages\n", 1)[1].split("\n\n## ", 1)[0] if "## New Messages\n" in prompt else ""
    users = [line[len("user: ") :] for line in section.splitlines() if line.startswith("user: ")]
    return json.dumps({"memory": [{"text": u[:300]} for u in users[-1:]]})


def _answer(prompt: str) -> str:
    """The memory line that shares most words with the query (its text after the timestamp and role)."""
    want = _words(_between(prompt, "Query: ", "\n"))
    memory = prompt.split("# Memory\n", 1)[-1].split("\n\n# Answer", 1)[0]
    lines = [line.strip() for line in memory.splitlines() if line.strip()]
    if not lines:
        return "I don't know."
    best = max(lines, key=lambda line: len(want & _words(line)))
    return best.split(": ", 1)[-1][:300] if "] " in best else best[:300]


def content_words(text: str) -> set[str]:
    """The lower-cased content words of a text (no stop words, three letters or more): what the scripted
    behaviours match on.

    >>> sorted(content_words("Where did I move to, Lisbon?"))
    ['lisbon', 'move']
    """
    return _words(str(text))


def scripted_reply(messages: Sequence[dict]) -> str:
    """What the family says to a chat request (its answer part; the think trace is added around it)."""
    prompt = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
    if (
        "Is the model response correct? Answer yes or no only." in prompt
        or "Does the model correctly identify the question as unanswerable?" in prompt
    ):
        return _judge_longmemeval(prompt)
    if "Generated answer: " in prompt and "CORRECT" in prompt:
        return _judge_locomo(prompt)
    if "# History Window\n" in prompt:
        return _window_decisions(prompt)
    if "Fused Historical Event" in prompt:
        return _prune(prompt)
    if "## New Messages" in prompt:
        return _mem0_extraction(prompt)
    return _answer(prompt)


def _think_text(messages: Sequence[dict]) -> str:
    """A think trace that reads the prompt back (a few hundred tokens, as a thinking model writes)."""
    user = next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")
    words = user.split()
    return "Okay, let me look at this. " + " ".join(words[:120]) + " So the answer follows from the above."


_FILLER = " Let me check that once more against the question."


class ScriptedQwen3:
    """A thinking model's server-side behaviour over the real Qwen3 tokenizer (see the module docstring).

    ``reply(messages)`` scripts what the model says: the answer (a string; the trace then reads the
    prompt back) or ``(trace, answer)`` (default ``scripted_reply``). ``think_tokens``: the trace padded
    or cut to that many tokens (a 32B judge thinks long), None: as scripted. ``reasoning_field``: where
    the trace goes when it is not inline: vLLM's ``--reasoning-parser`` fills ``reasoning`` (the
    default), DeepSeek ``reasoning_content``; None leaves it inline in ``content`` (vLLM without a
    parser). ``requests`` keeps every request body, ``finishes`` each reply's finish reason, and
    ``max_prompt_tokens`` the longest prompt seen per served model name.
    """

    def __init__(
        self,
        reply: Callable[[Sequence[dict]], str | tuple[str, str]] = scripted_reply,
        reasoning_field: str | None = "reasoning",
        max_model_len: int = QWEN3_MAX_MODEL_LEN,
        think_tokens: int | None = None,
    ):
        from transformers import AutoTokenizer

        from lazymem.llm.tokens import require_qwen3_tokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(require_qwen3_tokenizer()))
        self.reply, self.reasoning_field, self.max_model_len = reply, reasoning_field, max_model_len
        self.think_tokens = think_tokens
        self.requests: list[dict] = []
        self.finishes: list[str] = []
        self.max_prompt_tokens: Counter = Counter()
        self.seen_prompts: list[list[int]] = []  # every answered prompt's ids: the prefix cache
        self.lock = threading.Lock()

    @property
    def calls(self) -> list[tuple[dict, str]]:
        """(request body, finish reason) of every answered request, in order."""
        with self.lock:
            return list(zip(self.requests, self.finishes))

    def trace_ids(self, trace: str, budget: int | None) -> list[int]:
        ids = self.tokenizer.encode(trace, add_special_tokens=False)
        if self.think_tokens is not None:
            filler = self.tokenizer.encode(_FILLER, add_special_tokens=False)
            while len(ids) < self.think_tokens:
                ids += filler
            ids = ids[: self.think_tokens]
        return ids if budget is None else ids[: int(budget)]

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def prompt_ids(self, body: dict) -> list[int]:
        """The request's prompt as the served model reads it (its chat template applied)."""
        kwargs = dict(body.get("chat_template_kwargs") or {})
        cont = bool(body.get("continue_final_message"))
        ids = self.tokenizer.apply_chat_template(
            body["messages"],
            tokenize=True,
            add_generation_prompt=body.get("add_generation_prompt", not cont),
            continue_final_message=cont,
            **kwargs,
        )
        return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)

    def prompt_tokens(self, body: dict) -> int:
        return len(self.prompt_ids(body))

    def cached_tokens(self, ids: list[int]) -> int:
        """Prompt tokens a prefix cache holds for ``ids``: the longest prefix shared with an earlier prompt
        (vLLM's automatic prefix caching, without its block rounding), at most all but the last token."""
        best = 0
        with self.lock:
            for seen in self.seen_prompts:
                n = 0
                for a, b in zip(seen, ids):
                    if a != b:
                        break
                    n += 1
                best = max(best, n)
            self.seen_prompts.append(ids)
        return min(best, max(0, len(ids) - 1))

    def complete(self, body: dict) -> tuple[int, dict]:
        """(HTTP status, JSON body) for one chat completion request."""
        messages = body.get("messages") or []
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or 1024
        prompt_ids = self.prompt_ids(body)
        n_prompt = len(prompt_ids)
        with self.lock:
            model = str(body.get("model"))
            self.max_prompt_tokens[model] = max(self.max_prompt_tokens[model], n_prompt)
        if n_prompt + max_tokens > self.max_model_len:  # vLLM's check, its message
            return 400, {
                "object": "error",
                "type": "BadRequestError",
                "code": 400,
                "message": (
                    f"This model's maximum context length is {self.max_model_len} tokens. However, you requested "
                    f"{n_prompt + max_tokens} tokens ({n_prompt} in the messages, {max_tokens} in the completion). "
                    "Please reduce the length of the messages or completion."
                ),
            }
        said = self.reply(messages)
        trace, answer = said if isinstance(said, tuple) else (_think_text(messages), said)
        last = messages[-1] if messages else {}
        continues = bool(body.get("continue_final_message")) and last.get("role") == "assistant"
        thinking = (body.get("chat_template_kwargs") or {}).get("enable_thinking", True) is not False
        answer_ids = self.tokenizer.encode(answer, add_special_tokens=False)
        if (continues and THINK_CLOSE in str(last.get("content"))) or not thinking:
            ids = answer_ids
        else:
            ids = (
                self.tokenizer.encode(THINK_OPEN + "\n", add_special_tokens=False)
                + self.trace_ids(trace, body.get("thinking_token_budget"))
                + self.tokenizer.encode("\n" + THINK_CLOSE + "\n\n", add_special_tokens=False)
                + answer_ids
            )
        finish = "stop"
        if len(ids) > max_tokens:
            ids, finish = ids[:max_tokens], "length"
        text = self.tokenizer.decode(ids)
        for stop in body.get("stop") or []:
            if stop in text:
                text, finish = text[: text.index(stop)], "stop"
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if self.reasoning_field and text.startswith(THINK_OPEN):
            inner, closed, rest = text[len(THINK_OPEN) :].partition(THINK_CLOSE)
            message = {
                "role": "assistant",
                "content": rest.strip() if closed else None,
                self.reasoning_field: inner.strip(),
            }
        with self.lock:
            self.requests.append(body)
            self.finishes.append(finish)
        n_out = self.count(text)
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": n_prompt,
                "completion_tokens": n_out,
                "total_tokens": n_prompt + n_out,
                "prompt_tokens_details": {"cached_tokens": self.cached_tokens(prompt_ids)},
            },
        }


class ScriptedServer:
    """``ScriptedQwen3`` on a free loopback port (stdlib HTTP, a thread): ``with ScriptedServer() as url``."""

    def __init__(self, family: ScriptedQwen3 | None = None):
        self.family = family or ScriptedQwen3()

    def __enter__(self) -> str:
        family = self.family

        class Handler(BaseHTTPRequestHandler):
            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802 (http.server's name)
                if self.path.rstrip("/") in ("/health", "/v1/health"):
                    self._send(200, {"status": "ok"})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self):  # noqa: N802
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                    status, payload = family.complete(body)
                except Exception as e:  # a scripted server's own failure shows as the server error it is
                    status, payload = 500, {"error": {"message": f"{type(e).__name__}: {e}"}}
                self._send(status, payload)

            def log_message(self, *args):  # quiet
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # the clients send a question's windows at once (concurrency 64)
            daemon_threads = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)
