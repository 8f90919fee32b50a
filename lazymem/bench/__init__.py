"""Benchmarks, each measured side by side in one run and written to JSON (and a figure).

- ``retrieval``: index cost and per-query stage latency as histories grow (``lazymem bench retrieval``).
- ``pipeline``: per-stage seconds a question (retrieval / processing / answer) for each
  engine on the same questions, batched vs sequential, and the eval cold vs warm
  (``lazymem bench pipeline``).
- ``embedding``: first-time embedding throughput by batch size, threads and length sorting,
  and a query's encode cost against a bare sentence-transformers call (``lazymem bench embedding``).
- ``latency``: the paper's latency protocol for any method: questions one at a time, 3 warm-up
  runs discarded, mean / P50 / P90 / P95 by stage over the next 3, LLM cache off
  (``lazymem bench latency CONFIG``).

Nothing is imported until used (``lazymem --help`` builds the bench parser from ``bench.cli``);
``from lazymem.bench import bench_retrieval`` still works.
"""

__all__ = ["DEFAULT_LONGMEMEVAL", "bench_history", "bench_retrieval", "growth", "tables"]


def __getattr__(name: str):
    if name in __all__:
        from lazymem.bench import retrieval

        return getattr(retrieval, name)
    raise AttributeError(f"module 'lazymem.bench' has no attribute {name!r}")
