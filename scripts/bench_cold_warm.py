"""The demo eval from cold caches, then again warm, side by side in one run (issue: cold start).

    python scripts/bench_cold_warm.py [--config configs/eval_demo.yaml] [--out runs/bench_cold_warm.json]

Both runs are fresh processes of ``lazymem eval CONFIG`` with ``LAZYMEM_CACHE`` pointing at one
new, empty directory (models copied out of their packages, message and query embeddings, LLM
calls): the first fills it, the second finds every call it needs there. Each writes its own run
folder, so nothing is read back from a finished run. The JSON holds both wall times, their ratio,
and whether the two runs' records agree (answers, memories, pools).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(config: str, out: Path, cache: Path) -> float:
    env = {**os.environ, "LAZYMEM_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "lazymem.cli", "eval", config, "--out", str(out)], cwd=ROOT, env=env,
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def records(out: Path) -> list[dict]:
    keep = ("question_id", "status", "answer", "memory", "pool")
    rows = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    for r in rows:
        if isinstance(r.get("pool"), dict):
            r["pool"] = r["pool"].get("positions")  # timings differ by design
    return sorted(({k: r.get(k) for k in keep} for r in rows), key=lambda r: r["question_id"])


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/eval_demo.yaml")
    ap.add_argument("--out", default="runs/bench_cold_warm.json")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lazymem-cold-") as tmp:
        cache = Path(tmp) / "cache"
        cold = run(args.config, Path(tmp) / "cold", cache)
        warm = run(args.config, Path(tmp) / "warm", cache)
        same = records(Path(tmp) / "cold") == records(Path(tmp) / "warm")
    result = {"config": args.config, "cold_s": round(cold, 1), "warm_s": round(warm, 2),
              "ratio": round(cold / warm, 1), "same_records": same, "cpus": os.cpu_count(),
              "when": time.strftime("%Y-%m-%d %H:%M")}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
