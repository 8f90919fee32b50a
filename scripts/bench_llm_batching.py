"""Measure batching gains for the memory-processing model on this machine (CPU).

1. In process (TransformersBackend): n window-sized prompts one at a time vs in one batch.
2. `transformers serve --continuous-batching` (OpenAIBackend): one request at a time vs n in flight.

Every completion is forced to exactly --new-tokens tokens in process (min_new_tokens) so
both arms do the same work; server throughput counts the tokens the server reports.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench_llm_batching.py --out runs/bench_llm_batching.json
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from lazymem.llm import LLMConfig, Sampling, TransformersBackend, make_client, resolve_model

SPEAKERS = ("Caroline", "Melanie")
LINES = [
    "I finally signed up for the pottery class on Thursday evenings.",
    "That sounds lovely! Did you end up buying the blue glaze you mentioned?",
    "Not yet, the shop near the station was closed when I went on Saturday.",
    "We drove to the lake with the kids and camped for two nights last weekend.",
    "My sister moved to Lisbon in May and keeps sending pictures of the tiles.",
    "I have a job interview at the animal shelter next Tuesday at ten.",
    "Remember to bring the recipe for the lemon cake to book club.",
    "The doctor said my knee needs another six weeks before I can run again.",
]


def window_prompt(i: int, tokenizer, target: int) -> str:
    """A memory-construction style prompt of about `target` tokens (query + numbered messages)."""
    head = (
        f"Query {i}: What did the user say about their plans?\nFor each message below output a JSON "
        'decision {"op": "KEEP"|"DROP", "compressed_content": str, "reason": str}.\nMessages:\n'
    )
    body, k = "", 0
    while len(tokenizer(head + body)["input_ids"]) < target:
        body += f"[{k}] {SPEAKERS[k % 2]}: {LINES[(k + i) % len(LINES)]}\n"
        k += 1
    return head + body


def in_process(model: str, prompts: list[str], new_tokens: int, n: int) -> dict:
    s = Sampling(max_tokens=new_tokens)
    out = {}
    for name, bs in (("sequential", 1), ("batched", n)):
        backend = TransformersBackend(
            LLMConfig(backend="transformers", model=model, batch_size=bs, extra_body={"min_new_tokens": new_tokens})
        )
        backend.generate(prompts[:1], Sampling(max_tokens=4))  # load + warm up
        t0 = time.perf_counter()
        res = backend.generate(prompts, s)
        dt = time.perf_counter() - t0
        toks = sum(c.completion_tokens or 0 for c in res)
        out[name] = {
            "seconds": round(dt, 2),
            "completion_tokens": toks,
            "tok_per_s": round(toks / dt, 2),
            "texts": [c.text for c in res],
            "errors": [c.error for c in res if c.error],
        }
    out["speedup"] = round(out["sequential"]["seconds"] / out["batched"]["seconds"], 2)
    out["greedy_outputs_identical"] = out["sequential"].pop("texts") == out["batched"].pop("texts")
    return out


def served(model_dir: str, prompts: list[str], new_tokens: int, n: int, cache: Path) -> dict:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [
        str(Path(sys.executable).with_name("transformers")),
        "serve",
        model_dir,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--device",
        "cpu",
        "--continuous-batching",
        "--cb-num-blocks",
        "256",
        "--cb-block-size",
        "32",
        "--cb-max-batch-tokens",
        "2048",
    ]
    cache.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        out = {}
        s = Sampling(max_tokens=new_tokens)
        for name, conc in (("sequential", 1), ("concurrent", n)):
            client = make_client(
                LLMConfig(
                    backend="openai",
                    model=model_dir,
                    base_url=f"http://127.0.0.1:{port}/v1",
                    concurrency=conc,
                    max_retries=0,
                    timeout=600,
                )
            )
            client.generate(prompts[:1], Sampling(max_tokens=4))  # first call allocates the cache
            t0 = time.perf_counter()
            res = client.generate(prompts, s)
            dt = time.perf_counter() - t0
            toks = sum(c.completion_tokens or 0 for c in res)
            out[name] = {
                "seconds": round(dt, 2),
                "completion_tokens": toks,
                "tok_per_s": round(toks / dt, 2),
                "texts": [c.text for c in res],
                "errors": [c.error for c in res if c.error],
            }
        out["speedup"] = round(out["sequential"]["seconds"] / out["concurrent"]["seconds"], 2)
        out["greedy_outputs_identical"] = out["sequential"].pop("texts") == out["concurrent"].pop("texts")
        return out
    finally:
        proc.kill()
        proc.wait()


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-offline")
    ap.add_argument("--n", type=int, default=8, help="prompts (and batch size / requests in flight)")
    ap.add_argument("--prompt-tokens", type=int, default=600)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--skip", choices=("none", "inprocess", "serve"), default="none")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from transformers import AutoTokenizer

    model_dir = resolve_model(args.model)
    tok = AutoTokenizer.from_pretrained(model_dir)
    prompts = [window_prompt(i, tok, args.prompt_tokens) for i in range(args.n)]
    result = {
        "model": args.model,
        "n": args.n,
        "prompt_tokens": args.prompt_tokens,
        "new_tokens": args.new_tokens,
        "cpus": os.cpu_count(),
        "load_avg_before": os.getloadavg(),
    }
    if args.skip != "inprocess":
        result["in_process"] = in_process(args.model, prompts, args.new_tokens, args.n)
        print(json.dumps(result["in_process"]), flush=True)
    if args.skip != "serve":
        result["transformers_serve_cb"] = served(
            model_dir, prompts, args.new_tokens, args.n, Path(tempfile.mkdtemp(prefix="hf-hub-cache-"))
        )
        print(json.dumps(result["transformers_serve_cb"]), flush=True)
    result["load_avg_after"] = os.getloadavg()
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
