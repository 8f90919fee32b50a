"""Where gold evidence sits relative to the retrieval hits, and what a run kept of each kind.

    python scripts/gold_position.py data SPEC... [--config configs/eval/locomo_cpu.yaml] [--limit 80] [--out F]
    python scripts/gold_position.py kept RUN_DIR... [--out F]

``data``: for each data set (a dataset spec or path; LoCoMo conversations 9-10, the test set, are left out),
the first ``--limit`` questions with evidence are retrieved with the pipeline's retrieval of ``--config``
(the test tables' by default: n 10), and each gold message is counted as a hit (in the pool), a neighbour of
one at distance 1 or 2 (inside a window of radius 1 or 2 around a hit, not a hit itself) or unseen, with
its mean word overlap with the question (``lexical_scores``), and the share of distance-1 neighbours that
answer a hit: the hit is the turn just before, by the other speaker, and asks something ("?"). A model that only
ever saw gold hits has never been asked to keep the reply next to the turn that matches the question.

``kept``: from finished eval runs' ``windows.jsonl`` (their window decisions), the gold and non-gold
decisions on hits and on neighbours, and how many of each were KEEP.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
from pathlib import Path

TEST_HISTORIES = ("conv-49", "conv-50")  # LoCoMo conversations 9-10: the test set, never looked at here


def data_positions(spec: str, retrieval, limit: int) -> dict:
    """Gold positions relative to the hits over one data set's first ``limit`` questions with evidence."""
    from lazymem.construct.extractive import lexical_scores
    from lazymem.data.datasets import load_dataset
    from lazymem.retrieve.retriever import Retriever

    ds = load_dataset(spec)
    questions = [q for q in ds.questions if q.evidence and q.history_id not in TEST_HISTORIES][:limit]
    retriever = Retriever(retrieval)
    kinds: dict[str, list[float]] = collections.defaultdict(list)
    answers = 0  # distance-1 neighbours right after a hit that asks a question ("?") in the other speaker's turn
    for q in questions:
        h = ds.history(q)
        hits = set(retriever.retrieve(h, q.text).positions)
        for g in q.evidence:
            near = min((abs(g - p) for p in hits), default=None)
            kind = "hit" if near == 0 else "neighbour_1" if near == 1 else "neighbour_2" if near == 2 else "unseen"
            kinds[kind].append(lexical_scores(q.text, [h[g].text])[0])
            answers += kind == "neighbour_1" and g - 1 in hits and "?" in h[g - 1].text and h[g - 1].role != h[g].role
    n = sum(len(v) for v in kinds.values())
    return {
        "spec": spec,
        "questions": len(questions),
        "gold": n,
        "neighbour_1_answering_a_hit_question": (
            round(answers / len(kinds["neighbour_1"]), 3) if kinds["neighbour_1"] else None
        ),
        **{
            k: {
                "share": round(len(kinds[k]) / n, 3) if n else None,
                "mean_overlap": round(statistics.fmean(kinds[k]), 3) if kinds[k] else None,
            }
            for k in ("hit", "neighbour_1", "neighbour_2", "unseen")
        },
    }


def kept_positions(run: Path) -> dict:
    """Gold / non-gold decisions on hits and on neighbours in a run's windows, and the KEEPs among them."""
    counts: collections.Counter = collections.Counter()
    with open(run / "windows.jsonl", encoding="utf-8") as f:
        for line in f:
            w = json.loads(line)
            for d in w.get("decisions") or []:
                kind = ("gold" if d["pos"] in w["gold"] else "nongold") + (
                    "_hit" if d["pos"] in w["hits"] else "_neighbour"
                )
                counts[kind] += 1
                counts[kind + "_kept"] += d["op"] == "KEEP"
    return {
        "run": str(run),
        **{
            k: {"decisions": counts[k], "kept": counts[k + "_kept"]}
            for k in ("gold_hit", "gold_neighbour", "nongold_hit", "nongold_neighbour")
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    d = sub.add_parser("data", help="gold hits / neighbours / unseen per data set")
    d.add_argument("specs", nargs="+")
    d.add_argument("--config", default="configs/eval/locomo_cpu.yaml", help="eval config whose retrieval is used")
    d.add_argument("--limit", type=int, default=80, help="questions with evidence per data set")
    k = sub.add_parser("kept", help="what finished runs kept of gold hits and gold neighbours")
    k.add_argument("runs", nargs="+", type=Path)
    for p in (d, k):
        p.add_argument("--out", help="also write the rows as JSON here")
    args = ap.parse_args(argv)
    if args.what == "data":
        from lazymem.pipeline import PipelineConfig

        retrieval = PipelineConfig.from_yaml(args.config).retrieval
        rows = [data_positions(s, retrieval, args.limit) for s in args.specs]
        print(
            "| data | questions | gold | hit | neighbour (1) | neighbour (2) | unseen | (1) answering the hit's "
            "question |"
        )
        print("|---|---:|---:|---|---|---|---|---:|")
        for r in rows:
            cells = [
                f"{r[k]['share']} (overlap {r[k]['mean_overlap']})" if r[k]["share"] else "0"
                for k in ("hit", "neighbour_1", "neighbour_2", "unseen")
            ]
            print(
                f"| {r['spec']} | {r['questions']} | {r['gold']} | "
                + " | ".join(cells)
                + f" | {r['neighbour_1_answering_a_hit_question']} |"
            )
    else:
        missing = [r for r in args.runs if not (r / "windows.jsonl").is_file()]
        for r in missing:  # records stay out of git: a run made on another machine has only its summary here
            print(f"{r}: no windows.jsonl (rerun its eval to get the window records); left out", file=sys.stderr)
        rows = [kept_positions(r) for r in args.runs if r not in missing]
        print("| run | gold hits kept | gold neighbours kept | non-gold hits kept | non-gold neighbours kept |")
        print("|---|---:|---:|---:|---:|")
        for r in rows:
            cells = [
                f"{r[k]['kept']} / {r[k]['decisions']}"
                for k in ("gold_hit", "gold_neighbour", "nongold_hit", "nongold_neighbour")
            ]
            print(f"| {r['run']} | " + " | ".join(cells) + " |")
    if args.out:
        from lazymem.files import write_json

        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        write_json(args.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
