"""A stress test of the LLM judge: how often it accepts wrong answers and rejects right ones.

``lazymem judge-audit --config CONFIG`` takes the questions an eval config selects (dataset,
subset, split, ids, types, limit: as ``lazymem eval`` selects them), builds candidate answers of
five kinds for each without any model (``lazymem.eval.audit_answers``: the golden answer,
paraphrases of it, vague-but-on-topic wrong answers, specific-but-wrong answers, abstentions), and
asks the config's judge about every candidate through the same ``judge_answer`` that ``lazymem
eval`` calls (its prompts, its reply parsing, its no-verdict errors, its LLM cache). A table config
(``configs/tables/*.yaml``) is read as one of its sets (``--table-set``, default the first) over its
base recipe: the judge a cell of that table uses.

Rates: false accept = the judge says correct on a vague, specific-but-wrong or abstaining answer;
false reject = the judge says wrong on the golden answer or a paraphrase; per kind, per question
type and overall, each with a Wilson 95% interval over the candidates with a verdict (the
candidates of one question are not independent, so the intervals are on the narrow side). Replies
with no verdict and failed calls are counted, never scored. LongMemEval abstention questions and
LoCoMo category 5 have no gold answer to vary: they are skipped, and listed.

The result (``judge_audit.json``) carries the judge's settings (kind, model, backend, server URL
redacted, thinking, reply cap, the sha256 of each prompt it was sent) so that it can stand beside
the table cells that judge scored.

>>> rate([{"kind": "vague", "label": True}, {"kind": "specific", "label": False}], WRONG_KINDS, True)["rate"]
0.5
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from lazymem.errors import ConfigError, int_in, path_text
from lazymem.eval.audit_answers import RIGHT_KINDS, WRONG_KINDS, Candidate, candidates, skip_reason

if TYPE_CHECKING:
    from lazymem.eval.config import EvalConfig
    from lazymem.llm import LLMClient
    from lazymem.records import Dataset, Question


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float] | None:
    """The Wilson score interval of the proportion k/n (95% by default); None when n is 0.

    >>> [round(x, 4) for x in wilson(0, 10)], [round(x, 4) for x in wilson(5, 10)]
    ([0.0, 0.2775], [0.2366, 0.7634])
    """
    if n == 0:
        return None
    p, z2 = k / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(rows: Sequence[Mapping], kinds: Sequence[str], bad_label: bool) -> dict:
    """The share of ``rows`` of these kinds whose judge label is ``bad_label``, over those with a label.

    >>> rate([{"kind": "vague", "label": True}, {"kind": "vague", "label": None}], ["vague"], True)["rate"]
    1.0
    """
    mine = [r for r in rows if r["kind"] in kinds]
    judged = [r for r in mine if r["label"] is not None]
    k = sum(r["label"] is bad_label for r in judged)
    ci = wilson(k, len(judged))
    return {
        "rate": k / len(judged) if judged else None,
        "low": ci[0] if ci else None,
        "high": ci[1] if ci else None,
        "k": k,
        "n": len(judged),
        "no_verdict": sum(bool(r.get("unparseable")) for r in mine),
        "errors": sum(r["label"] is None and not r.get("unparseable") for r in mine),
    }


COLUMNS = {  # column -> (kinds, the label that counts as a judge error)
    "false_reject": (RIGHT_KINDS, False),
    "FR golden": (("golden",), False),
    "FR paraphrase": (("paraphrase",), False),
    "false_accept": (WRONG_KINDS, True),
    "FA vague": (("vague",), True),
    "FA specific": (("specific",), True),
    "FA abstain": (("abstain",), True),
}


def audit_rates(rows: Sequence[Mapping]) -> dict:
    """Every ``COLUMNS`` rate, overall ("all") and per question type."""
    groups = {"all": list(rows)}
    for r in rows:
        groups.setdefault(r["type"], []).append(r)
    return {g: {c: rate(rs, kinds, bad) for c, (kinds, bad) in COLUMNS.items()} for g, rs in groups.items()}


def _cell(r: Mapping) -> str:
    if r["rate"] is None:
        return "-"
    return f"{100 * r['rate']:.1f}% [{100 * r['low']:.1f}, {100 * r['high']:.1f}] ({r['k']}/{r['n']})"


def audit_markdown(result: Mapping) -> str:
    """The result's table: one row per question type and overall, a column per rate, and the judge."""
    j = result["judge"]
    lines = [
        f"Judge audit: {j['kind']} judge, model {j['model']} ({j['backend']}, {j['base_url'] or 'local'}), "
        f"{result['questions']} questions, {result['candidates']} candidates",
        "",
        "| type | " + " | ".join(COLUMNS) + " | no verdict | errors |",
        "|---" * (len(COLUMNS) + 3) + "|",
    ]
    for group, cols in result["rates"].items():
        nv = sum(cols[c]["no_verdict"] for c in ("false_reject", "false_accept"))
        err = sum(cols[c]["errors"] for c in ("false_reject", "false_accept"))
        lines.append(f"| {group} | " + " | ".join(_cell(cols[c]) for c in COLUMNS) + f" | {nv} | {err} |")
    lines += [
        "",
        "FR: the judge says wrong on the gold answer or a paraphrase; FA: the judge says correct on a vague, "
        "a specific-but-wrong or an abstaining answer. Wilson 95% intervals over candidates with a verdict.",
    ]
    if result["skipped"]:
        lines.append(f"Skipped {len(result['skipped'])} questions without a gold answer to vary.")
    return "\n".join(lines) + "\n"


def judge_settings(config: EvalConfig, prompt_names: Sequence[str]) -> dict:
    """What identifies the judge: kind, model, backend, redacted server URL, thinking, caps, prompt hashes."""
    from lazymem.eval.judge import JUDGE_MAX_TOKENS
    from lazymem.prompts import PROMPTS
    from lazymem.secrets import redact

    j = config.pipeline.judge
    return redact(
        {
            "kind": config.judge,
            "backend": j.backend,
            "model": j.model,
            "base_url": j.base_url,
            "chat_template_kwargs": j.chat_template_kwargs,
            "thinking_budget": j.thinking_budget,
            "max_tokens": config.judge_max_tokens or JUDGE_MAX_TOKENS[config.judge],
            "json_mode": config.judge_json_mode,
            "seed": config.seed,
            "prompts": {n: PROMPTS[n].sha256 for n in sorted(set(prompt_names))},
        }
    )


BESIDE_COLUMNS = ("judge_false_accept", "judge_false_reject")  # the table columns of a judged cell


def read_result(path: str) -> dict:
    """A ``judge_audit.json`` (``lazymem judge-audit``), checked: LoadError naming the file and the field
    when it is not one (a judge's settings and overall false-accept/-reject rates are what a table reads).
    """
    from lazymem.errors import LoadError
    from lazymem.files import read_json

    result, _ = read_json(path)
    if not isinstance(result, Mapping):
        raise LoadError(str(path), None, None, "expected a judge_audit.json object (lazymem judge-audit --out DIR)")
    if not isinstance(result.get("judge"), Mapping) or not result["judge"].get("kind"):
        raise LoadError(str(path), None, "judge", "missing: the audited judge's settings")
    overall = (result.get("rates") or {}).get("all") if isinstance(result.get("rates"), Mapping) else None
    for column in ("false_accept", "false_reject"):
        if not isinstance(overall, Mapping) or not isinstance(overall.get(column), Mapping):
            raise LoadError(str(path), None, f"rates.all.{column}", "missing")
    return dict(result)


def judge_differences(result: Mapping, config: EvalConfig) -> list[str]:
    """How the audited judge differs from the judge of ``config`` (a table cell's): [] when it is the
    same judge (kind, model, backend, server URL, thinking, caps, seed and the sha256 of each prompt the
    audit sent), else one "setting: audit X, cell Y" a difference."""
    if config.judge == "none" or config.pipeline.judge is None:
        return ["the cell has no judge"]
    audited = json.loads(json.dumps(result["judge"]))
    mine = json.loads(json.dumps(judge_settings(config, list(audited.get("prompts") or {}))))
    return [f"{k}: audit {audited.get(k)!r}, cell {v!r}" for k, v in mine.items() if audited.get(k) != v]


def beside_columns(result: Mapping) -> dict:
    """A judged cell's columns from its judge's audit: the overall false-accept and false-reject rates."""
    overall = result["rates"]["all"]
    return dict(zip(BESIDE_COLUMNS, (overall["false_accept"]["rate"], overall["false_reject"]["rate"])))


def beside_line(path: str, result: Mapping, rows: Sequence[str]) -> str:
    """The page's line on an audit standing beside judged rows: its judge, its overall rates with intervals."""
    j, overall = result["judge"], result["rates"]["all"]
    data = (result.get("dataset") or {}).get("name") or "?"
    return (
        f"Judge audit `{Path(path).as_posix()}` ({j['kind']} judge, model {j.get('model')}; {result.get('questions')} "
        f"questions of {data}, {result.get('candidates')} candidates; commit {str(result.get('commit') or '?')[:7]}), "
        f"beside {', '.join(rows) or 'no row (no judged cell of this judge)'}: judge_false_accept "
        f"{_cell(overall['false_accept'])}, judge_false_reject {_cell(overall['false_reject'])} "
        "(Wilson 95%; per type: its judge_audit.md)."
    )


def load_audit_config(
    path: str, overrides: Sequence[str] = (), limit: int | None = None, table_set: str | None = None
) -> EvalConfig:
    """The EvalConfig of an eval recipe, or of a table config's set over its base recipe; then ``--set``."""
    from lazymem.eval.config import EvalConfig, apply_overrides
    from lazymem.yamlio import read_mapping

    data = read_mapping(path)
    if "base" in data and "sets" in data:  # a configs/tables/*.yaml: the base recipe with one set's overrides
        sets = data["sets"] if isinstance(data["sets"], Mapping) else {}
        name = table_set or next(iter(sets), None)
        if name not in sets or not isinstance(sets[name] or {}, Mapping):
            raise ConfigError(f"{path}: sets: no set {name!r} (sets: {', '.join(map(str, sets)) or 'none'})")
        set_overrides = [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in (sets[name] or {}).items()]
        data = apply_overrides(read_mapping(str(data["base"])), set_overrides)
    elif table_set:
        raise ConfigError(f"{path}: --table-set {table_set!r} needs a table config (with base and sets)")
    if limit is not None:
        data["limit"] = limit
    config = EvalConfig.from_dict(apply_overrides(data, overrides))
    if config.judge == "none" or config.pipeline.judge is None:
        raise ConfigError(f"{path}: judge: none; the audit needs a judge (set judge and pipeline.judge)")
    return config


def _judge_one(client: LLMClient, config: EvalConfig, question: Question, c: Candidate) -> dict:
    from lazymem.eval.judge import judge_answer

    got = judge_answer(
        client,
        question,
        c.text,
        config.judge,
        seed=config.seed,
        max_tokens=config.judge_max_tokens,
        json_mode=config.judge_json_mode,
    )
    return {
        "question_id": question.id,
        "type": question.type,
        "question": question.text,
        "gold": str(question.answer),
        **asdict(c),
        "label": got["label"],
        "unparseable": got["unparseable"],
        "error": got["error"],
        "response": got["response"],
        "prompt_name": got["prompt_name"],
    }


def audit(config: EvalConfig, *, client: LLMClient | None = None, dataset: Dataset | None = None, per_kind: int = 2):
    """Build every selected question's candidates, judge them; returns (result, per-candidate rows).

    ``client``: a ready judge client (default: ``pipeline.judge`` behind the eval LLM cache).
    """
    from lazymem.eval.config import resolve_cache, select_questions
    from lazymem.eval.judge import check_judge

    config, _ = resolve_cache(config)
    if dataset is None:
        from lazymem.data import load_dataset

        dataset = load_dataset(config.dataset, subset=config.subset)
    questions = select_questions(dataset, config)
    check_judge(questions, config.judge)
    skipped = {q.id: why for q in questions if (why := skip_reason(q))}
    kept = [q for q in questions if q.id not in skipped]
    pool: dict[str, list[str]] = {}
    for q in kept:
        pool.setdefault(q.type, []).append(str(q.answer))
    work = [(q, c) for q in kept for c in candidates(q, pool, per_kind, config.seed)]
    if client is None:
        from lazymem.llm import make_client

        client = make_client(config.pipeline.judge)
    with ThreadPoolExecutor(max_workers=max(1, config.workers)) as ex:
        rows = list(ex.map(lambda qc: _judge_one(client, config, *qc), work))
    from lazymem import __version__
    from lazymem.runinfo import git_commit, now

    result = {
        "judge": judge_settings(config, [r["prompt_name"] for r in rows if r["prompt_name"]]),
        "dataset": {"spec": config.dataset, "name": dataset.name, "sha256": dataset.sha256, "subset": config.subset},
        "questions": len(kept),
        "candidates": len(rows),
        "per_kind": per_kind,
        "rates": audit_rates(rows),
        "skipped": skipped,
        "version": __version__,
        "commit": git_commit(),
        "created": now(),
    }
    return result, rows


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The ``lazymem judge-audit`` options on `p`; returns it."""
    p.epilog = "exit status: 0 done; 2 bad input (one line naming file and field); 1 a bug"
    p.add_argument("--config", type=path_text, required=True, help="eval recipe (configs/eval/*.yaml) or table config")
    p.add_argument("--table-set", metavar="NAME", help="a table config's set (default: its first)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override any recipe key, e.g. --set pipeline.judge.base_url=http://gpu-node:8001/v1 (repeatable)",
    )
    p.add_argument("--limit", type=int_in(0, 10_000_000), metavar="N", help="at most this many questions (0 = all)")
    p.add_argument(
        "--per-kind", type=int_in(1, 6), default=2, metavar="N", help="candidates of each kind but golden (1..6)"
    )
    p.add_argument(
        "--out", type=path_text, metavar="DIR", help="folder for the results (default: runs/judge_audit/<config name>)"
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON instead of the table")
    return p


def run_from_args(args: argparse.Namespace) -> int:
    """Run ``lazymem judge-audit``: write judge_audit.json, .md and judge_audit_records.jsonl; print the table."""
    from lazymem.files import print_json, write_atomic, write_json, write_jsonl

    config = load_audit_config(args.config, args.overrides, args.limit, args.table_set)
    out = Path(args.out or Path("runs") / "judge_audit" / Path(args.config).stem)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a folder")
    result, rows = audit(config, per_kind=args.per_kind)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "judge_audit.json", result)
    write_atomic(out / "judge_audit.md", audit_markdown(result))
    write_jsonl(out / "judge_audit_records.jsonl", rows)
    print_json(result) if args.json else print(audit_markdown(result), end="")
    return 0
