"""A sqlite disk cache in front of any client: a rerun of the same calls is free and exact.

One file, ``<cache_dir>/llm_calls.sqlite``, keyed by the sha256 of (the client's identity,
the prompt, the sampling settings). Only successful completions are stored.

Credentials never reach the key or the file: the identity is passed through
``lazymem.secrets.redact`` first, so a value under a secret name (``api_key``,
``Authorization``, ...) at any depth of ``extra_body`` / ``chat_template_kwargs`` / headers,
or one that looks like a key (``sk-...``, ``Bearer ...``), becomes "<redacted>". Two
different keys therefore share one entry: a credential decides who may call, not what the
model answers. An identity without credentials is hashed exactly as before (old caches
keep hitting); the stored ``request`` column holds the redacted request.

>>> from lazymem.llm.fake import FakeBackend
>>> import tempfile
>>> inner = FakeBackend(); inner.identity = {"backend": "openai", "extra_body": {"api_key": "sk-abcdefgh123"}}
>>> with tempfile.TemporaryDirectory() as d:
...     c = CachedClient(inner, d); r = c.request_json("hi"); c.close()
>>> "sk-abcdefgh123" in r, '"<redacted>"' in r
(False, True)
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from lazymem.llm.base import Completion, LLMClient, Prompt, Sampling, generate_each, to_messages
from lazymem.secrets import redact


class CachedClient:
    """Wraps a client with a sqlite store of successful completions (errors are never stored).

    The key is the sha256 of (the inner client's identity, the prompt, the sampling
    settings). A stored answer comes back identical except ``cached=True``. With
    temperature > 0 a prompt still maps to one stored sample per seed: vary the seed (or
    use no cache) to draw several.
    """

    FILENAME = "llm_calls.sqlite"

    def __init__(self, inner: LLMClient, cache_dir: str | os.PathLike):
        self.inner = inner
        self.model_id = inner.model_id
        self.identity = inner.identity
        self._key_identity = redact(inner.identity)  # credentials out of the key and the file (see module doc)
        self.load_s = 0.0  # seconds spent loading the inner model on the first miss (never on a hit)
        self._loaded = False
        self._load_lock = threading.Lock()
        self.path = Path(cache_dir) / self.FILENAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")  # readers in other processes do not block writers
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                "request TEXT NOT NULL, completion TEXT NOT NULL, created REAL NOT NULL)"
            )
            self._db.commit()

    def request_json(self, prompt: Prompt, sampling: Sampling = Sampling()) -> str:
        """The request text that is hashed into the key and stored: the identity with its
        credentials redacted, the prompt, the sampling settings."""
        return self._request(prompt, sampling)

    def _request(self, prompt: Prompt, sampling: Sampling) -> str:
        return json.dumps(
            {
                "model": self._key_identity,
                "prompt": prompt if isinstance(prompt, str) else to_messages(prompt),
                "sampling": sampling.as_dict(),
            },
            sort_keys=True,
            ensure_ascii=False,
        )

    @staticmethod
    def key_of(request: str) -> str:
        return hashlib.sha256(request.encode("utf-8")).hexdigest()

    def key(self, prompt: Prompt, sampling: Sampling = Sampling()) -> str:
        """The cache key of one call."""
        return self.key_of(self._request(prompt, sampling))

    def _lookup(self, keys: list[str]) -> dict[str, Completion]:
        found: dict[str, Completion] = {}
        with self._lock:
            for start in range(0, len(keys), 500):  # stay under sqlite's parameter limit
                chunk = keys[start : start + 500]
                rows = self._db.execute(
                    f"SELECT key, completion FROM calls WHERE key IN ({','.join('?' * len(chunk))})", chunk
                ).fetchall()
                found.update((k, Completion.from_dict(json.loads(c))) for k, c in rows)
        return found

    def _store(self, items: list[tuple[str, str, Completion]]) -> None:
        rows = [
            (k, c.model or self.model_id, req, json.dumps(c.to_dict(), ensure_ascii=False), time.time())
            for k, req, c in items
            if c.error is None
        ]
        if rows:
            with self._lock:
                self._db.executemany("INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?)", rows)
                self._db.commit()

    def _split(self, prompts: Sequence[Prompt], sampling: Sampling):
        return self._split_each(prompts, [sampling] * len(prompts))

    def _split_each(self, prompts: Sequence[Prompt], samplings: Sequence[Sampling]):
        requests = [self._request(p, s) for p, s in zip(prompts, samplings, strict=True)]
        keys = [self.key_of(r) for r in requests]
        hits = self._lookup(sorted(set(keys)))
        misses = [i for i, k in enumerate(keys) if k not in hits]
        return requests, keys, hits, misses

    def _merge(self, requests, keys, hits, misses, fresh: list[Completion]) -> list[Completion]:
        self._store([(keys[i], requests[i], c) for i, c in zip(misses, fresh)])
        out: list[Completion] = [dataclasses.replace(hits[k], cached=True) if k in hits else None for k in keys]  # type: ignore[misc]
        for i, c in zip(misses, fresh):
            out[i] = c
        return out

    def load_inner(self) -> None:
        """Load the inner model (once; timed into ``load_s``). Called on the first miss, so a run
        whose every call is a hit never loads a model; a model that cannot load raises
        ModelLoadError (a run stops on it)."""
        from lazymem.errors import ModelLoadError

        with self._load_lock:
            if self._loaded:
                return
            load = getattr(self.inner, "load", None)
            if callable(load):
                t0 = time.perf_counter()
                try:
                    load()
                except Exception as e:
                    raise ModelLoadError(f"{self.model_id}: {type(e).__name__}: {e}") from e
                self.load_s += time.perf_counter() - t0
            self._loaded = True

    def generate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        requests, keys, hits, misses = self._split(prompts, sampling)
        if misses:
            self.load_inner()
        fresh = self.inner.generate([prompts[i] for i in misses], sampling) if misses else []
        return self._merge(requests, keys, hits, misses, fresh)

    def generate_each(self, prompts: Sequence[Prompt], samplings: Sequence[Sampling]) -> list[Completion]:
        """One completion per (prompt, sampling), the misses in one call of the inner client's
        ``generate_each`` (or one ``generate`` each where it has none)."""
        requests, keys, hits, misses = self._split_each(prompts, samplings)
        if misses:
            self.load_inner()
        fresh = generate_each(self.inner, [prompts[i] for i in misses], [samplings[i] for i in misses])
        return self._merge(requests, keys, hits, misses, fresh)

    async def agenerate(self, prompts: Sequence[Prompt], sampling: Sampling = Sampling()) -> list[Completion]:
        requests, keys, hits, misses = self._split(prompts, sampling)
        todo = [prompts[i] for i in misses]
        if todo:
            await asyncio.to_thread(self.load_inner)
        if not todo:
            fresh = []
        elif hasattr(self.inner, "agenerate"):
            fresh = await self.inner.agenerate(todo, sampling)
        else:
            fresh = await asyncio.to_thread(self.inner.generate, todo, sampling)
        return self._merge(requests, keys, hits, misses, fresh)

    def close(self) -> None:
        with self._lock:
            self._db.close()
