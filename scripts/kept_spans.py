"""Where the answer goes when a KEEP keeps a span: the gold answer's tokens in each kept gold message, whole and
as kept.

    python scripts/kept_spans.py RUN_DIR... [--dataset SPEC] [--out F]
    python scripts/kept_spans.py --openings SPEC [--histories ID,ID...] [--out F]

A RUN_DIR is an eval run directory (``lazymem eval`` / ``eval-table``) with its ``records.jsonl``; the messages are
read again from the run's data set (its manifest's ``dataset``, or ``--dataset``). For every KEEP of a gold message
(the question's evidence), the share of the answer's tokens (LoCoMo's normalisation, ``lazymem.answers``) in the
whole message and in the kept content; how many kept messages hold an answer token whole and as kept; and, of the
spans that lost answer tokens, how many are the message's opening (the content is where the message starts).
Evidence recall counts a kept span of a gold message as the message kept; this says what the span lost.

``--openings SPEC``: no run, only a data set (``--histories`` picks conversations, e.g. LoCoMo's 1-8, the
development ones): of the gold messages that hold an answer token, how many have more than one sentence and how
many hold one in their first sentence (up to the first ``.``, ``!`` or ``?`` before a space). A writer that keeps a
message's opening keeps the answer where that share is high.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from lazymem.answers import answer_text, answer_tokens


def kept_gold(record: Mapping, texts: Mapping[int, str]) -> Iterable[tuple[str, str, set[str]]]:
    """(whole message, kept content, answer tokens) of each KEEP of a gold message in one question's record."""
    q = record.get("question") or {}
    if q.get("abstention") or q.get("category") == 5:  # no answer to find (as lazymem.answers.answer_recall)
        return
    answer = set(answer_tokens(answer_text(q.get("answer"), q.get("category"))))
    gold = {g for w in record.get("windows") or () for g in w.get("gold") or ()}
    for d in record.get("decisions") or ():
        if d.get("op") == "KEEP" and d.get("pos") in gold:
            yield texts[d["pos"]], d.get("content") or "", answer


def summarise(pairs: Iterable[tuple[str, str, set[str]]]) -> dict:
    n = whole_has = kept_has = lost = lost_opening = 0
    whole_share = kept_share = 0.0
    for text, content, answer in pairs:
        if not answer:  # an answer without a token (an abstention) says nothing about the cut
            continue
        whole, kept = set(answer_tokens(text)) & answer, set(answer_tokens(content)) & answer
        n += 1
        whole_share += len(whole) / len(answer)
        kept_share += len(kept) / len(answer)
        whole_has += bool(whole)
        kept_has += bool(kept)
        if len(kept) < len(whole):
            lost += 1
            lost_opening += text.strip().startswith(content.strip())
    return {
        "kept_gold_messages": n,
        "answer_share_whole": round(whole_share / n, 3) if n else None,
        "answer_share_kept": round(kept_share / n, 3) if n else None,
        "with_answer_token_whole": whole_has,
        "with_answer_token_kept": kept_has,
        "spans_that_lost_answer_tokens": lost,
        "of_them_the_message_opening": lost_opening,
    }


def run(run_dir: str | Path, dataset: str | None = None) -> dict:
    from lazymem.data.datasets import load_dataset
    from lazymem.eval.runfiles import latest_records, read_records

    d = Path(run_dir)
    records = d / "records.jsonl"
    if not records.is_file():
        raise SystemExit(f"kept_spans: {run_dir}: no records.jsonl (an eval run directory)")
    if dataset is None:
        try:
            dataset = json.loads((d / "manifest.json").read_text(encoding="utf-8"))["config"]["dataset"]
        except (OSError, ValueError, KeyError) as e:
            raise SystemExit(f"kept_spans: {d / 'manifest.json'}: no config.dataset ({e}); pass --dataset") from None
    ds = load_dataset(dataset)
    pairs = []
    raw, _ = read_records(records)  # a bad line is a LoadError naming the file and line
    for r in latest_records(raw).values():  # a question retried counts once, as its last record
        if r.get("status") != "ok":
            continue
        history = ds.histories[r["question"]["history_id"]]
        texts = {k: m.text for k, m in enumerate(history.messages)}
        pairs.extend(kept_gold(r, texts))
    return {"run": str(d), "dataset": dataset, **summarise(pairs)}


def first_sentence(text: str) -> str:
    """Up to the first ``.``, ``!`` or ``?`` followed by a space or the end (the whole text without one).

    >>> first_sentence("Hey Sam! I adopted a corgi."), first_sentence("no stop here")
    ('Hey Sam!', 'no stop here')
    """
    m = re.search(r"[.!?](\s|$)", text)
    return text[: m.end()].strip() if m else text.strip()


def openings(spec: str, histories: set[str] | None = None) -> dict:
    """How often a data set's gold messages hold an answer token in their first sentence (module docstring)."""
    from lazymem.data.datasets import load_dataset

    ds = load_dataset(spec)
    if histories and not histories <= set(ds.histories):
        raise SystemExit(f"kept_spans: {spec}: no histories {sorted(histories - set(ds.histories))}")
    n = multi = opening = 0
    for q in ds.questions:
        if (histories and q.history_id not in histories) or q.abstention or q.category == 5:
            continue
        answer = set(answer_tokens(answer_text(q.answer, q.category)))
        messages = ds.histories[q.history_id].messages
        for p in sorted(set(q.evidence)):
            text = messages[p].text
            if not answer or not set(answer_tokens(text)) & answer:
                continue
            n += 1
            head = first_sentence(text)
            multi += head != text.strip()
            opening += bool(set(answer_tokens(head)) & answer)
    return {
        "dataset": spec,
        "histories": sorted(histories) if histories else None,
        "gold_with_answer_token": n,
        "of_them_several_sentences": multi,
        "of_them_answer_in_first_sentence": opening,
        "share": round(opening / n, 3) if n else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="*", help="eval run directories")
    ap.add_argument("--dataset", help="the data set spec (default: each run's manifest)")
    ap.add_argument(
        "--openings",
        action="append",
        default=[],
        metavar="SPEC",
        help="a data set: where its gold messages hold the answer (repeatable)",
    )
    ap.add_argument("--histories", help="with --openings: comma-separated history ids to read (default: all)")
    ap.add_argument("--out", help="write the results as JSON here")
    a = ap.parse_args(argv)
    if not a.runs and not a.openings:
        ap.error("give run directories, or --openings SPEC")
    hist = set(a.histories.split(",")) if a.histories else None
    out = [run(r, a.dataset) for r in a.runs] + [openings(spec, hist) for spec in a.openings]
    for o in out:
        print(json.dumps(o))
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
