"""Memory perturbation study (the paper's appendix "Downstream perturbation").

For each question, a full-gold memory is compared with paired variants: drop one gold
message (each gold message in turn), drop all gold, and add 1, 5 or all local non-gold
messages (the non-gold messages of the question's windows: retrieval + windowing as in the
pipeline; random additions drawn ``draws`` times). Each memory is answered with the same
answer model and prompt (``answer_text``) and scored (judge label, else LoCoMo F1 / the
answer-F1 proxy); the variants of one question are averaged first, then accuracy, the
paired change from full gold with a question-level paired bootstrap 95% interval, the share
of initially correct answers flipped to incorrect (C->I) and the mean memory tokens (per question first) are
reported, as in the paper's Table tab:action_reward_perturbation.

``lazymem perturb RUN_DIR`` (``perturb_run``) runs the study on the questions of a finished
eval run: its windows give each question's local non-gold messages, its config the answer
model, prompt and sampling, its dataset the score (LoCoMo F1, else the judge, else the
answer-F1 proxy). Answers go through the run's LLM cache, so a killed study resumes for free.

>>> sorted(variants([1, 2], [5, 6, 7], "drop_one_gold"))
[[1], [2]]
>>> [len(v) for v in variants([1], [5, 6, 7], "add_1_nongold", draws=2, seed=0)]
[2, 2]
"""

from __future__ import annotations

import random
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lazymem.errors import ConfigError, LoadError
from lazymem.prompts import PROMPTS, text_memory
from lazymem.records import History, Question
from lazymem.stats import paired_bootstrap

if TYPE_CHECKING:
    from lazymem.eval.records import RunRecord
    from lazymem.llm import LLMClient, Sampling

CONDITIONS = ("full_gold", "drop_one_gold", "drop_all_gold", "add_1_nongold", "add_5_nongold", "add_all_nongold")


def variants(
    gold: Sequence[int], nongold: Sequence[int], condition: str, draws: int = 3, seed: int = 0
) -> list[list[int]]:
    """The memories (sorted positions) of one condition for one question."""
    gold, nongold = sorted(gold), sorted(set(nongold) - set(gold))
    if condition == "full_gold":
        return [gold]
    if condition == "drop_one_gold":
        return [[p for p in gold if p != g] for g in gold]
    if condition == "drop_all_gold":
        return [[]]
    if condition == "add_all_nongold":
        return [sorted(gold + nongold)]
    if condition in ("add_1_nongold", "add_5_nongold"):
        k = 1 if condition == "add_1_nongold" else 5
        if len(nongold) <= k:
            return [sorted(gold + nongold)]
        rng = random.Random(f"{seed}:{condition}:{gold}")
        return [sorted(gold + rng.sample(nongold, k)) for _ in range(draws)]
    raise ValueError(f"condition {condition!r}: one of {CONDITIONS}")


def perturbation_study(
    items: Sequence[tuple[History, Question, Sequence[int]]],
    answer: LLMClient,
    sampling: Sampling,
    score: Callable[[Question, str], float | None],
    conditions: Sequence[str] = CONDITIONS,
    draws: int = 3,
    seed: int = 0,
    count_tokens: Callable[[str], int | None] | None = None,
    n_resamples: int = 9999,
    progress: bool = False,
) -> dict:
    """Run the study over (history, question, local non-gold positions) items.

    ``score(question, answer) -> 0..1`` (a judge label or F1); questions without gold evidence
    are skipped. All answer prompts go to ``answer`` in one ``generate`` call per condition.
    A condition's ``tokens`` is None (shown "-") without ``count_tokens`` or when it returned
    None for any of its memories (the tokenizer is missing): never a mean of the counts it had.
    """
    items = [(h, q, ng) for h, q, ng in items if q.evidence]
    per_q: dict[str, dict[str, float]] = {c: {} for c in conditions}
    tokens: dict[str, dict[str, list[int | None]]] = {c: {} for c in conditions}  # per question, its variants
    answers: dict[str, dict[str, list[str]]] = {c: {} for c in conditions}
    todo = conditions
    if progress:
        from tqdm.auto import tqdm

        todo = tqdm(conditions, desc="perturbation", unit="condition")
    for c in todo:
        prompts, owners = [], []
        for h, q, ng in items:
            for v in variants(q.evidence, ng, c, draws, seed):
                memory = text_memory([h[p] for p in v])
                prompts.append(
                    PROMPTS["answer_text"].messages(query_time=q.query_time, query=q.text, memory_text=memory)
                )
                owners.append(q)
                if count_tokens is not None:
                    tokens[c].setdefault(q.id, []).append(count_tokens(memory))
        outs = answer.generate(prompts, sampling) if prompts else []
        scores: dict[str, list[float]] = {}
        for q, o in zip(owners, outs):
            text = "" if o.error is not None else o.text.strip()
            answers[c].setdefault(q.id, []).append(text)
            s = score(q, text)
            if s is not None:
                scores.setdefault(q.id, []).append(float(s))
        per_q[c] = {qid: statistics.fmean(v) for qid, v in scores.items()}
    base = per_q.get("full_gold", {})
    rows = []
    for c in conditions:
        s = per_q[c]
        row: dict[str, Any] = {
            "condition": c,
            "questions": len(s),
            "accuracy": statistics.fmean(s.values()) if s else None,
            "tokens": _mean_tokens(tokens[c]),
            "delta": None,
            "low": None,
            "high": None,
            "c_to_i": None,
        }
        if c != "full_gold" and base:
            b = paired_bootstrap(s, base, n_resamples=n_resamples, seed=seed)
            row.update(delta=b["delta"], low=b["low"], high=b["high"])
            correct = [qid for qid, v in base.items() if v >= 0.5 and qid in s]
            row["c_to_i"] = statistics.fmean(1.0 - s[qid] for qid in correct) if correct else None
        rows.append(row)
    return {"rows": rows, "per_question": per_q, "answers": answers, "draws": draws, "seed": seed}


def _mean_tokens(per_question: Mapping[str, Sequence[int | None]]) -> float | None:
    """Mean tokens over questions, each question's variants averaged first (as the scores are);
    None when there are none or any is unknown.

    >>> _mean_tokens({"a": [2, 4], "b": [6]}), _mean_tokens({"a": [0], "b": [None]}), _mean_tokens({})
    (4.5, None, None)
    """
    counts = [v for vs in per_question.values() for v in vs]
    if not counts or any(v is None for v in counts):
        return None
    return statistics.fmean(statistics.fmean(vs) for vs in per_question.values())


def perturbation_markdown(study: dict) -> str:
    """The study as the paper's table: Acc., Delta (95% CI), C->I, Tok."""

    def pct(x):
        return "-" if x is None else f"{100 * x:.1f}"

    lines = [
        "| memory | questions | Acc. (%) | Delta (pp) [95% CI] | C->I (%) | Tok. |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for r in study["rows"]:
        ci = "-" if r["delta"] is None else f"{pct(r['delta'])} [{pct(r['low'])}, {pct(r['high'])}]"
        tok = "-" if r["tokens"] is None else f"{r['tokens']:,.0f}"
        lines.append(
            f"| {r['condition']} | {r['questions']} | {pct(r['accuracy'])} | {ci} | {pct(r['c_to_i'])} | {tok} |"
        )
    return "\n".join(lines) + "\n"


def local_nongold(record: RunRecord | Mapping) -> list[int]:
    """The positions a run showed its memory step for one question (its windows, else its pool), less the gold."""
    from lazymem.eval.attribution import candidates
    from lazymem.eval.records import RunRecord

    record = RunRecord.of(record)
    return sorted((candidates(record) or set()) - set(record.question.evidence))


def perturb_run(
    run_dir: str | Path,
    out: str | Path | None = None,
    *,
    draws: int = 3,
    limit: int | None = None,
    conditions: Sequence[str] = CONDITIONS,
    seed: int = 0,
    n_resamples: int = 9999,
    progress: bool = True,
    clients: Mapping[str, LLMClient] | None = None,
) -> dict:
    """The perturbation study on the questions of a finished eval run; writes it to `out`:
    ``perturbation.json`` (numbers), ``perturbation.md`` (the table), ``answers.json`` (every answer).

    Questions with gold evidence and an ok record are used, in run order (the first `limit`).
    Without the Qwen3 tokenizer the ``Tok.`` column is missing ("-", ``tokenizer: "missing"``);
    ``perturb_command`` says so before the study starts. A hand-edited manifest or record that
    cannot be read is a LoadError naming the file, the record and the field.
    """
    from lazymem.data import load_dataset
    from lazymem.eval.config import EvalConfig, resolve_cache, seeded
    from lazymem.eval.f1 import locomo_f1, token_f1
    from lazymem.eval.judge import judge_answer
    from lazymem.eval.report import read_manifest
    from lazymem.eval.runfiles import MANIFEST_FILE, RECORDS_FILE, latest_records, load_records
    from lazymem.eval.scoring import check_records
    from lazymem.llm import tokens
    from lazymem.pipeline import LazyMemPipeline

    if not (isinstance(draws, int) and draws >= 1):
        raise ConfigError(f"perturb: draws={draws!r} must be an integer >= 1")
    if not (limit is None or (isinstance(limit, int) and limit >= 0)):  # records[:-1] would drop the last
        raise ConfigError(f"perturb: limit={limit!r} must be None or 0 (all questions), or an integer >= 1")
    run = Path(run_dir)
    if not (run / MANIFEST_FILE).is_file():
        raise ConfigError(f"{run / MANIFEST_FILE}: missing (not a lazymem eval run folder)")
    manifest = read_manifest(run / MANIFEST_FILE)
    if not manifest.get("config"):
        raise LoadError(str(run / MANIFEST_FILE), None, "config", "missing (the resolved config of the run)")
    if not (run / RECORDS_FILE).is_file():
        raise ConfigError(f"{run}: no {RECORDS_FILE} (the run's records stay on the machine that ran it)")
    config, _ = resolve_cache(seeded(EvalConfig.from_dict(manifest["config"])))
    dataset = load_dataset(config.dataset, subset=config.subset)
    want = (manifest.get("dataset") or {}).get("sha256")
    if want and dataset.sha256 != want:
        raise ConfigError(
            f"{run / MANIFEST_FILE}: field dataset.sha256 is {want[:12]}..., but {config.dataset} "
            f"now reads as {dataset.sha256[:12]}... (the data changed since the run)"
        )
    all_records = check_records(load_records(run / RECORDS_FILE)[0], str(run / RECORDS_FILE))
    records = [
        r for r in latest_records(all_records).values() if r.ok and r.question is not None and r.question.evidence
    ]
    records = records[:limit] if limit else records
    if not records:
        raise ConfigError(f"{run / RECORDS_FILE}: no ok record of a question with gold evidence")
    items = _items(dataset, records, str(run / RECORDS_FILE))
    pipeline = LazyMemPipeline(config.pipeline, clients=clients)
    judge = config.judge != "none" and all(q.category is None for _, q, _ in items)

    def score(q: Question, answer: str) -> float | None:
        if q.category is not None:
            return locomo_f1(answer, q.answer, q.category)
        if judge:
            j = judge_answer(
                pipeline.client("judge"),
                q,
                answer,
                config.judge,
                seed=config.seed,
                max_tokens=config.judge_max_tokens,
                json_mode=config.judge_json_mode,
            )
            return j["label"] if j["error"] is None else None
        return token_f1(answer, q.answer)

    missing = tokens.tokenizer_warning()  # checked once, before any work: the column is whole or missing
    study = perturbation_study(
        items,
        pipeline.client("answer"),
        config.pipeline.answer_sampling,
        score,
        conditions=conditions,
        draws=draws,
        seed=seed,
        n_resamples=n_resamples,
        count_tokens=None if missing else tokens.count_tokens,
        progress=progress,
    )
    metric = (
        "locomo_f1"
        if any(q.category is not None for _, q, _ in items)
        else "judge accuracy"
        if judge
        else "answer_f1 (proxy)"
    )
    study.update(
        run_dir=str(run),
        metric=metric,
        dataset=manifest.get("dataset"),
        tokenizer="missing" if missing else "qwen3",
        answer_model=config.pipeline.answer.model,
        method=config.pipeline.method,
        nongold_per_question=statistics.fmean(len(ng) for _, _, ng in items),
    )
    if out is not None:
        from lazymem.files import write_atomic, write_json

        o = Path(out)
        o.mkdir(parents=True, exist_ok=True)
        # the answers quote the data (LoCoMo text stays out of git): their own file, beside the numbers
        write_json(o / "perturbation.json", {k: v for k, v in study.items() if k != "answers"})
        write_json(o / "answers.json", study["answers"], ensure_ascii=False)
        head = (
            f"Perturbation study on {len(items)} questions of `{run}` ({config.dataset}); answerer "
            f"{config.pipeline.answer.model}; score {metric}; {draws} draws per random addition; local "
            f"non-gold = the run's windows ({study['nongold_per_question']:.1f} messages a question)."
            + (f" Tok. missing: the Qwen3 tokenizer was not found (`{tokens.FETCH_COMMAND}`)." if missing else "")
            + "\n\n"
        )
        write_atomic(o / "perturbation.md", head + perturbation_markdown(study))
    return study


def _items(dataset, records: Sequence[RunRecord], file: str) -> list[tuple[History, Question, list[int]]]:
    """(history, question, local non-gold positions) of each record; LoadError naming `file`, the record
    and the field when a record's question is not in the dataset or its windows / pool hold no positions."""
    questions = {q.id: q for q in dataset.questions}
    out = []
    for r in records:
        where = f"record of question_id {r.question_id!r}"
        q = questions.get(r.question_id)
        if q is None:
            raise LoadError(file, where, "question_id", f"not a question of the run's dataset {dataset.name!r}")
        try:
            nongold = local_nongold(r)
        except (KeyError, TypeError, ValueError) as e:
            raise LoadError(
                file, where, "windows" if r.windows else "pool", f"no readable positions ({type(e).__name__}: {e})"
            ) from None
        out.append((dataset.history(q), q, nongold))
    return out


MAX_DRAWS = 1000  # each draw is one more answer a question and condition


def perturb_parser(s) -> None:
    """The ``lazymem perturb`` options, added to the (sub)parser ``s``."""
    from lazymem.errors import SEED_MAX, int_in, path_text

    s.add_argument(
        "run_dir", type=path_text, help="a finished `lazymem eval` run folder (its records give the windows)"
    )
    s.add_argument("--out", type=path_text, help="folder for perturbation.json / .md (default: RUN_DIR/perturbation)")
    s.add_argument(
        "--draws",
        type=int_in(1, MAX_DRAWS),
        default=3,
        help=f"random draws per +1 / +5 non-gold memory (1..{MAX_DRAWS})",
    )
    s.add_argument(
        "--limit", type=int_in(0, 1_000_000), default=0, help="the first N questions with gold evidence (0 = all)"
    )
    s.add_argument("--seed", type=int_in(0, SEED_MAX), default=0, help=f"seed of the draws (0..{SEED_MAX})")
    s.add_argument("--no-progress", action="store_true")


def perturb_command(args) -> int:
    """``lazymem perturb``: run the study, write it, print its table."""
    from lazymem.llm.tokens import tokenizer_warning

    out = args.out or str(Path(args.run_dir) / "perturbation")
    missing = tokenizer_warning()
    if missing:
        print(f"lazymem perturb: warning: {missing}", file=sys.stderr, flush=True)
    study = perturb_run(
        args.run_dir, out, draws=args.draws, limit=args.limit or None, seed=args.seed, progress=not args.no_progress
    )
    print(Path(out, "perturbation.md").read_text(encoding="utf-8"))
    return 0 if study["rows"] else 1
