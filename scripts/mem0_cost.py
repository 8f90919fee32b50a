"""What one Mem0 add costs on a local llama.cpp server: the first (cold) add, then the next ones.

    python scripts/mem0_cost.py [--adds 8] [--history conv-49] [--serve] [--out FILE]

``--serve`` starts ``python -m llama_cpp.server`` with ``SERVER`` (SmolLM2-135M, Q8_0, its 8,192-token
context extended to 16,384 with YaRN; no ``--cache``: llama.cpp reuses the prompt prefix it holds, and the RAM cache
grew the server past 18 GB in 8 adds) and stops it at the end; without it,
the server at ``--base-url`` is used. Mem0 runs as method ``mem0`` runs it (``Mem0Store``, the
settings of ``configs/eval/mem0.yaml``), on the first ``--adds`` + 1 chunks of one history, in a
scratch store (``LAZYMEM_CACHE`` is pointed at a temporary folder: the real store is not touched).
Per add it records the wall seconds, the server's prompt and completion tokens, and the memories
stored; the summary is the mean and median of the adds after the first (the shared system prompt
in the KV cache), and that mean times the history's chunk count: the ingestion of one conversation.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ALIAS = "smollm2-135m-q8-yarn16k"
SERVER = {
    "n_ctx": 16384,
    "rope_scaling_type": 2,
    "rope_freq_scale": 0.5,
    "yarn_orig_ctx": 8192,  # 2 = YaRN
    "n_threads": 2,
    "n_batch": 512,
    "model_alias": ALIAS,
}


def serve(port: int, gguf: str) -> tuple[subprocess.Popen, list[str]]:
    """Start llama_cpp.server on ``gguf`` with SERVER and wait until it answers."""
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        gguf,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--verbose",
        "false",
    ]
    for k, v in SERVER.items():
        cmd += [f"--{k}", str(v).lower() if isinstance(v, bool) else str(v)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(f"/tmp/mem0_server_{port}.log", "w"))
    for _ in range(240):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
            return proc, cmd
        except OSError:
            if proc.poll() is not None:
                log = f"/tmp/mem0_server_{port}.log"
                raise SystemExit(f"llama_cpp.server exited ({proc.returncode}): see {log}") from None
            time.sleep(0.5)
    proc.terminate()
    raise SystemExit("llama_cpp.server did not answer in 120 s")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/eval/mem0.yaml")
    ap.add_argument("--dataset", default="../shared/data/locomo/locomo10.json#paper")
    ap.add_argument("--history", default="conv-49")
    ap.add_argument("--adds", type=int, default=8, help="adds timed after the first (cold) one")
    ap.add_argument("--serve", action="store_true", help="start llama_cpp.server with SERVER (and stop it after)")
    ap.add_argument(
        "--threads",
        type=int,
        default=SERVER["n_threads"],
        help="llama.cpp threads (1 on a shared machine: 2 threads spin at every barrier when the cores "
        "are oversubscribed; a decode step took ~8 s at load 7 on 2 cores)",
    )
    ap.add_argument(
        "--flash-attn",
        action="store_true",
        help="serve with --flash_attn true (llama.cpp's fused attention; compare the warm adds with and "
        "without on the same idle cores)",
    )
    ap.add_argument("--port", type=int, default=8011)
    ap.add_argument("--base-url", default=None, help="without --serve: the server (default http://127.0.0.1:PORT/v1)")
    ap.add_argument("--model", default=ALIAS, help="the name the server serves")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    SERVER["n_threads"] = args.threads
    if args.flash_attn:
        SERVER["flash_attn"] = True
    from lazymem.llm.gguf_build import gguf_for

    gguf = str(gguf_for("smollm2-offline"))  # the Q8_0 GGUF the llamacpp backend uses, in the real cache
    os.environ["LAZYMEM_CACHE"] = tempfile.mkdtemp(prefix="mem0_cost_")  # a scratch Mem0 store

    from lazymem.data import load_dataset
    from lazymem.pipeline import PipelineConfig
    from lazymem.pipeline.mem0 import Mem0Store, chunk_history

    proc, cmd = serve(args.port, gguf) if args.serve else (None, None)
    try:
        base_url = args.base_url or f"http://127.0.0.1:{args.port}/v1"
        cfg = PipelineConfig.from_yaml(args.config)
        cfg = dataclasses.replace(
            cfg, mpm=dataclasses.replace(cfg.mpm, model=args.model, base_url=base_url, timeout=1800.0, max_retries=0)
        )
        history = load_dataset(args.dataset).histories[args.history]
        n_chunks = len(chunk_history(history, cfg.mem0.chunk))
        k = (
            next(
                i
                for i in range(len(history) + 1)
                if len(chunk_history(dataclasses.replace(history, messages=history.messages[:i]), cfg.mem0.chunk))
                > args.adds + 1
            )
            - 1
        )
        head = dataclasses.replace(history, messages=history.messages[:k])  # the first adds + 1 chunks
        store = Mem0Store(cfg, progress=False)
        mem, _, _ = store.open(head)
        create, calls = mem.llm.client.chat.completions.create, []

        def timed(*a, **kw):
            t0 = time.perf_counter()
            out = create(*a, **kw)
            u = out.usage
            calls.append(
                {
                    "seconds": round(time.perf_counter() - t0, 2),
                    "prompt_tokens": u.prompt_tokens,
                    "completion_tokens": u.completion_tokens,
                    "finish_reason": out.choices[0].finish_reason,
                }
            )
            print(json.dumps(calls[-1]), flush=True)
            return out

        mem.llm.client.chat.completions.create = timed
        prog, _ = store.ingest(head)
        store.close()
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
    warm = [c["seconds"] for c in calls[1:]]
    out = {
        "server": {"command": cmd and " ".join(cmd[1:]), **SERVER} if cmd else {"base_url": base_url},
        "load_average": os.getloadavg(),
        "model": args.model,
        "history": args.history,
        "chunk": cfg.mem0.chunk,
        "n_chunks": n_chunks,
        "mpm_sampling": cfg.mpm_sampling.as_dict(),
        "calls": calls,
        "first_add_s": calls[0]["seconds"] if calls else None,
        "warm_add_s": {"mean": statistics.mean(warm), "median": statistics.median(warm), "n": len(warm)}
        if warm
        else None,
        "conversation_h": round(statistics.mean(warm) * n_chunks / 3600, 2) if warm else None,
        "ingestion": {k: prog[k] for k in ("llm_calls", "parse_failed", "no_facts", "empty_adds", "memories_added")},
    }
    print(json.dumps({k: v for k, v in out.items() if k != "calls"}, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":
    main()
