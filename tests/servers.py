"""Helpers for tests that need a real server process on the loopback interface."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalServer:
    """A `transformers serve` process on a free loopback port; restarted if a test killed it."""

    def __init__(self, model: str, root: Path):
        self.model, self.root, self.proc = model, root, None
        self.lines: list[str] = []

    def ensure(self) -> str:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        return self.url

    def start(self, keep_port: bool = False):
        """Start (or restart) the server; keep_port restarts it on the port it had, so a
        client configured with the old URL reaches the new process."""
        port = self.port if keep_port and getattr(self, "port", None) else free_port()
        self.port = port
        self.url = f"http://127.0.0.1:{port}/v1"
        # unbuffered: the fault test acts on the access-log line as soon as it is written
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "HF_HUB_CACHE": str(self.root),
            "OMP_NUM_THREADS": "1",
            "PYTHONUNBUFFERED": "1",
        }
        exe = Path(sys.executable).with_name("transformers")
        self.proc = subprocess.Popen(
            [str(exe), "serve", self.model, "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines = []
        threading.Thread(target=lambda: self.lines.extend(iter(self.proc.stdout.readline, "")), daemon=True).start()
        import urllib.request

        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("transformers serve exited:\n" + "".join(self.lines[-20:]))
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError("transformers serve did not become healthy in 120 s")

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


try:  # at module level: FastAPI resolves the handler's (string) annotation in this module's globals
    from fastapi import Request
except ImportError:  # pragma: no cover - fastapi comes with transformers' serve extra
    Request = None


class _ThreadedApp:
    """Runs ``self.app`` (FastAPI) with uvicorn in a thread on a free loopback port: ``with S() as url``."""

    def __enter__(self) -> str:
        import uvicorn

        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 30
        while not self.server.started:
            if time.time() > deadline:
                raise RuntimeError(f"{type(self).__name__} did not start in 30 s")
            time.sleep(0.05)
        return f"http://127.0.0.1:{self.port}/v1"

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=10)


class EmbeddingServer(_ThreadedApp):
    """A real OpenAI-compatible ``/v1/embeddings`` server (FastAPI + uvicorn, in a thread) that
    embeds with a local sentence-transformers model, as vLLM or TEI would on a GPU node. It
    returns vectors NOT normalised (so clients must), answers 401 without the right key when
    started with one, and counts the requests and the texts it got."""

    def __init__(self, model: str = "minilm-offline", api_key: str | None = None):
        from fastapi import FastAPI
        from fastapi.responses import JSONResponse

        from lazymem.retrieve.dense import load_sentence_transformer

        self.model, self.api_key = model, api_key
        self.requests: list[int] = []
        st = load_sentence_transformer(model)
        app = FastAPI()

        @app.post("/v1/embeddings")
        async def embeddings(request: Request):
            if api_key is not None and request.headers.get("authorization") != f"Bearer {api_key}":
                return JSONResponse({"error": {"message": "invalid api key"}}, status_code=401)
            body = await request.json()
            if body.get("model") != model:
                return JSONResponse({"error": {"message": f"model {body.get('model')!r} not served"}}, status_code=404)
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            self.requests.append(len(texts))
            vecs = st.encode(texts, normalize_embeddings=False, convert_to_numpy=True)
            data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(vecs)]
            data.reverse()  # any order: the client sorts by index
            return {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": 0, "total_tokens": 0}}

        self.app = app


def new_messages(body: dict) -> list[str]:
    """The lines of the "## New Messages" section of Mem0's extraction prompt in a chat request."""
    prompt = "\n".join(m["content"] for m in body.get("messages", []) if m.get("role") == "user")
    section = prompt.split("## New Messages\n", 1)[1] if "## New Messages\n" in prompt else ""
    return [line for line in section.split("\n\n## ", 1)[0].splitlines() if line.strip()]


def mem0_extraction(body: dict) -> str:
    """A scripted Mem0 extractor: the last user line of the new messages as the one memory
    ({"memory": [{"text": ...}]}, the reply format of Mem0's ADDITIVE_EXTRACTION_PROMPT); none without one."""
    users = [line[len("user: ") :] for line in new_messages(body) if line.startswith("user: ")]
    return json.dumps({"memory": [{"text": users[-1]}] if users else []})


def thinking_model(answer, think_tokens: int = 2000, parser: str | None = None):
    """A scripted Qwen3-like thinking model for ChatServer, one word = one token.

    It writes ``<think> step0 ... step{think_tokens-1} </think>`` then ``answer`` (a string, or
    ``answer(body)``), and honours what vLLM does: ``max_tokens`` (cut, finish_reason "length"),
    ``stop`` strings (cut before them, "stop"), ``thinking_token_budget`` (the think phase ends
    after that many tokens), ``continue_final_message`` (a final assistant message that
    closes its ``</think>`` is continued: only the answer is written) and Qwen3's
    ``chat_template_kwargs: {enable_thinking: false}`` (no think phase: only the answer). ``parser``: None leaves
    the trace inline in ``content`` (vLLM without a reasoning parser); "reasoning" (vLLM) or
    "reasoning_content" (DeepSeek, older vLLM) returns it in that message field."""

    def reply(body: dict) -> dict:
        text_answer = answer(body) if callable(answer) else answer
        last = body["messages"][-1]
        thinking_off = (body.get("chat_template_kwargs") or {}).get("enable_thinking") is False
        if thinking_off or (
            body.get("continue_final_message") and last["role"] == "assistant" and "</think>" in last["content"]
        ):
            tokens = text_answer.split(" ")
        else:
            budget = body.get("thinking_token_budget")
            n = think_tokens if budget is None else min(think_tokens, budget)
            tokens = ["<think>", *(f"step{i}" for i in range(n)), "</think>", *text_answer.split(" ")]
        limit = body.get("max_completion_tokens") or body.get("max_tokens") or len(tokens)
        emitted, finish, text = [], "stop", ""
        for tok in tokens:
            if len(emitted) == limit:
                finish = "length"
                break
            emitted.append(tok)
            text = " ".join(emitted)
            hit = [text.index(s) for s in body.get("stop") or [] if s in text]
            if hit:
                text = text[: min(hit)]
                break
        out = {"content": text, "finish_reason": finish, "completion_tokens": len(emitted)}
        if parser and text.startswith("<think>"):
            inner, closed, rest = text[len("<think>") :].partition("</think>")
            out.update({"content": rest.strip() if closed else "", parser: inner.strip()})
        return out

    return reply


class ChatServer(_ThreadedApp):
    """A real OpenAI-compatible ``/v1/chat/completions`` server (FastAPI + uvicorn, in a thread)
    whose reply to each request is ``reply(body)`` of its JSON body (default ``mem0_extraction``),
    where a local llama.cpp or vLLM server would run a model. It keeps every request body, answers
    401 without the right key when started with one, and 500 when ``reply`` raises. A reply is the
    message text, or a dict with ``content`` and optionally ``finish_reason``,
    ``completion_tokens`` and a reasoning field (``reasoning`` / ``reasoning_content``), as a
    reasoning server sends (see ``thinking_model``)."""

    def __init__(self, reply=None, api_key: str | None = None):
        from fastapi import FastAPI
        from fastapi.responses import JSONResponse

        self.reply, self.api_key = reply or mem0_extraction, api_key
        self.requests: list[dict] = []
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request):
            if api_key is not None and request.headers.get("authorization") != f"Bearer {api_key}":
                return JSONResponse({"error": {"message": "invalid api key"}}, status_code=401)
            body = await request.json()
            self.requests.append(body)
            try:
                out = self.reply(body)
            except Exception as e:
                return JSONResponse({"error": {"message": f"{type(e).__name__}: {e}"}}, status_code=500)
            out = out if isinstance(out, dict) else {"content": out}
            text = out.get("content") or ""
            message = {
                "role": "assistant",
                "content": out.get("content"),
                **{k: out[k] for k in ("reasoning", "reasoning_content") if k in out},
            }
            n = out.get("completion_tokens", len(text.split()))
            return {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": out.get("finish_reason", "stop")}],
                "usage": {"prompt_tokens": 0, "completion_tokens": n, "total_tokens": n},
            }

        self.app = app
