"""Error attribution counts for finished run folders (first failing stage of each wrong answer).

    python scripts/attribute_runs.py RUN_DIR [RUN_DIR ...] [--dataset SPEC] [--out FILE] [--drill N]

Counts per run (retrieval miss / editing loss / QA error / no gold evidence) by question type, from
``lazymem.eval.attribution``; ``--drill N`` prints N drill-downs per run (gold messages, where they
went, memory and answer) to the terminal only: LoCoMo text stays out of the written JSON.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main(argv: list[str] | None = None) -> dict:
    from lazymem.data import load_dataset
    from lazymem.eval import load_records
    from lazymem.eval.attribution import attribute_run, drill_down

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--dataset", default="../shared/data/locomo/locomo10.json#paper")
    ap.add_argument("--out", default=None)
    ap.add_argument("--drill", type=int, default=0)
    args = ap.parse_args(argv)
    ds = load_dataset(args.dataset)
    texts = {h.id: {m.pos: m.text for m in h.messages} for h in ds.histories.values()}
    out = {}
    for d in args.runs:
        recs = [r for r in load_records(Path(d) / "records.jsonl")[0] if r.ok]
        a = attribute_run(recs, lambda r: texts.get(r.question.history_id))
        out[Path(d).name] = {k: a[k] for k in ("questions", "wrong", "counts", "by_type")}
        print(f"{Path(d).name}: {a['questions']} questions, {a['wrong']} wrong: {a['counts']}")
        shown = 0
        for item in a["items"]:
            if shown >= args.drill or item["stage"] not in ("retrieval miss", "editing loss", "QA error"):
                continue
            rec = next(r for r in recs if r.question_id == item["question_id"])
            print(json.dumps(drill_down(rec, texts.get(rec.question.history_id)), indent=1)[:3000])
            shown += 1
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
