"""Run the query pipeline over a dataset, judge the answers, and record everything.

``evaluate(EvalConfig(...), out_dir)`` writes, in ``out_dir`` (see lazymem.eval.runfiles):

- ``records.jsonl``: one JSON line per question (pool with per-stage ranks, windows with
  raw MPM outputs and gate verdicts, merged decisions, memory, answer, judge prompt,
  response and label, LoCoMo F1, memory tokens, the memory's own measures (evidence recall and
  answer recall in memory, lazymem.eval.memory_measures), wall times, error). Each line is appended,
  flushed and fsynced as soon as its question is done, so a killed run loses nothing
  finished. A rerun resumes: questions recorded "ok" are skipped, those recorded "error"
  are redone (their old lines move to ``errors.jsonl``), a half-written last line is dropped.
  It resumes only records of the same config fingerprint, dataset sha256 and prompt hashes
  (else ResumeMismatchError; records without a manifest: UnmanifestedRecordsError);
  ``force_new=True`` (``--force-new``) moves the old results into ``previous-<time>/`` first.
- ``.lock`` / ``.lock.json``: one run writes a folder at a time; a second one fails at once
  with RunLockedError naming the holder (pid, host, start). The OS frees the lock of a killed run.
  Ctrl-C (and SIGTERM under ``sigterm_exits``, as ``lazymem eval`` runs) end a run with status
  ``interrupted`` in its manifest; a run killed outright (kill -9) stays ``running`` there, which
  readers show as ``interrupted`` when nobody holds the lock (``lazymem.eval.report.run_status``),
  and the next run into the folder records it so.
- ``summary.json``: accuracy per type (judge labels), LoCoMo F1 per category, Gate Fmt.,
  rewritten rate, gold-keep recall, evidence recall, answer recall in memory, memory tokens,
  latency percentiles per stage, counts, and the ratios to a baseline run when one is given (lazymem.eval.scoring).
- ``manifest.json``: resolved config (API keys never, only the NAME of their environment
  variable), git commit, package versions, dataset sha256, prompt hashes, model ids, the
  reranker that ran, times and command line of every run into this folder (lazymem.eval.provenance).
- ``windows.jsonl``: the same windows, one line each, for the window explorer notebook.

Model calls go through the LLM disk cache (``llm_cache_dir``, default
``$LAZYMEM_CACHE/llm``), so rerunning a finished configuration is cheap and identical.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lazymem.errors import ModelLoadError
from lazymem.eval.config import EvalConfig, config_fingerprints, resolve_cache, seeded, select_questions
from lazymem.eval.f1 import contains_gold, locomo_f1, token_f1
from lazymem.eval.judge import check_judge, judge_answer
from lazymem.eval.memory_measures import audited_summary, measure_record
from lazymem.eval.provenance import close_manifest, new_manifest
from lazymem.eval.records import JudgeRecord, MeasuresRecord, QuestionMeta, RunRecord
from lazymem.eval.runfiles import (
    ERRORS_FILE,
    MANIFEST_FILE,
    RECORDS_FILE,
    SUMMARY_FILE,
    WINDOWS_FILE,
    RunLock,
    append_synced,
    load_manifest,
    load_records,
    read_json,
    read_jsonl,
    resume,
    run_identity,
    secret_masker,
    set_aside,
    window_lines,
    write_atomic,
)
from lazymem.eval.scoring import RunningScore, compare_with_baseline, summarize
from lazymem.eval.usage import with_usage
from lazymem.records import Question
from lazymem.runinfo import now

if TYPE_CHECKING:
    from lazymem.llm import LLMClient
    from lazymem.pipeline import LazyMemPipeline
    from lazymem.records import Dataset


# --- one question ------------------------------------------------------------------------------------


def _tokens(text: str) -> tuple[int | None, str]:
    """(Qwen3 token count, tokenizer status); never raises for a missing tokenizer."""
    try:
        from lazymem.llm import tokens  # looked up per call, so a patched count_tokens is seen

        return tokens.count_tokens(text), "qwen3"
    except (OSError, ImportError):  # TokenizerMissing is a FileNotFoundError
        return None, "missing"


def question_meta(q: Question) -> QuestionMeta:
    """The question fields copied into its record."""
    return QuestionMeta(
        type=q.type,
        abbrev=q.abbrev,
        category=q.category,
        text=q.text,
        answer=q.answer,
        query_time=q.query_time,
        history_id=q.history_id,
        evidence=tuple(q.evidence),
        abstention=q.abstention,
    )


def run_question(pipeline: LazyMemPipeline, dataset: Dataset, question: Question, config: EvalConfig) -> RunRecord:
    """The record of one question: the pipeline's result, scores, judge, tokens, timings.

    Never raises for a failed model call or an unexpected exception: the record says
    ``status: "error"`` with the message, and the run goes on.
    """
    history = None
    try:
        history = dataset.history(question)
        result = pipeline.answer(history, question)
        rec = RunRecord.from_result(result)
    except ModelLoadError:
        raise  # not this question's fault: the run stops and its manifest says why
    except Exception as e:  # a bug or bad input in one question must not end the run
        rec = RunRecord.failed(
            question.id,
            pipeline.config.method,
            f"pipeline: {type(e).__name__}: {e}",
            traceback.format_exc(limit=6)[-3000:],
        )
        result = None
    gold_in_pool = len(set(rec.pool.positions) & set(question.evidence)) if rec.pool is not None else None
    if rec.pool is None and rec.gold_shown is not None:
        gold_in_pool = rec.gold_shown  # nanomemory: gold inside the sessions it showed
    rec = rec.with_(
        question=question_meta(question),
        n_gold=len(question.evidence),
        gold_in_pool=gold_in_pool,
        memory_tokens=None,
        tokenizer=None,
        locomo_f1=None,
        answer_f1=None,
        answer_contains=None,
        judge=None,
        memory_measures=None,
    )
    if result is None:
        return rec
    try:  # the memory's own measures (not the answer's): a bug here must not end the run, nor pass unseen
        rec = rec.with_(memory_measures=MeasuresRecord.from_json(measure_record(rec, question, history).to_dict()))
    except Exception as e:
        rec = rec.with_(memory_measures_error=f"{type(e).__name__}: {e}")
    if config.count_tokens:
        n, tokenizer = _tokens(result.memory)
        rec = rec.with_(memory_tokens=n, tokenizer=tokenizer)
    else:
        rec = rec.with_(tokenizer="off")
    if not result.ok:
        return rec
    if question.category is not None:
        rec = rec.with_(locomo_f1=locomo_f1(result.answer, question.answer, question.category))
    elif question.answer:  # a proxy for runs without a judge; not a metric of the paper
        rec = rec.with_(
            answer_f1=token_f1(result.answer, question.answer),
            answer_contains=contains_gold(result.answer, question.answer),
        )
    if config.judge != "none":
        t0 = time.perf_counter()
        judge = JudgeRecord.from_json(
            judge_answer(
                pipeline.client("judge"),
                question,
                result.answer,
                config.judge,
                seed=config.seed,
                max_tokens=config.judge_max_tokens,
                json_mode=config.judge_json_mode,
            ),
            "judge",
        )
        rec = rec.with_(judge=judge, timings=rec.timings.with_(judge=time.perf_counter() - t0))
        if judge.error is not None:
            rec = rec.with_(status="error", error=f"judge: {judge.error}")
    return with_usage(rec)  # every call's tokens and seconds by stage (lazymem.eval.usage)


# --- the run -----------------------------------------------------------------------------------------


def evaluate(
    config: EvalConfig,
    out_dir: str | os.PathLike,
    progress: bool = True,
    *,
    clients: Mapping[str, LLMClient] | None = None,
    dataset: Dataset | None = None,
    retriever: Any = None,
    overwrite: bool = False,
    command: Sequence[str] | None = None,
    force_new: bool = False,
) -> dict:
    """Run (or resume) an evaluation into `out_dir`; returns the summary (also in summary.json).

    Args:
        config: what to run.
        out_dir: the run folder (created).
        progress: show a tqdm bar with the running score.
        clients: ready clients by role ("mpm", "answer", "judge"), used as given (no cache
            wrapping); e.g. scripted fakes.
        dataset: an already loaded dataset (else ``load_dataset(config.dataset, config.subset)``).
        retriever: a ready Retriever (or anything with ``retrieve(history, query) -> Pool``).
        overwrite: the old name of force_new (nothing is deleted any more).
        command: the command line for the manifest (default sys.argv).
        force_new: move earlier results into ``out_dir/previous-<time>/`` and start afresh
            instead of resuming (needed when the config, dataset or prompts changed).

    Raises:
        RunLockedError: another run is writing `out_dir` (raised at once, nothing touched).
        ResumeMismatchError / UnmanifestedRecordsError: earlier records that must not be resumed.
    """
    out = Path(out_dir)
    lock = RunLock(out).acquire()  # before anything in the folder is read or written
    try:
        return _evaluate(
            config,
            out,
            progress,
            clients=clients,
            dataset=dataset,
            retriever=retriever,
            force_new=force_new or overwrite,
            command=command,
            lock=lock,
        )
    finally:
        lock.release()


_terminated = False  # a SIGTERM arrived under sigterm_exits: the process is meant to end


@contextlib.contextmanager
def sigterm_exits():
    """For command lines that run ``evaluate``: SIGTERM raises SystemExit(143) in the main thread, so the
    run's ``finally`` writes its summary and the manifest status ``interrupted`` (SIGTERM's default
    action ends the process on the spot). Library callers (notebooks, tests) keep their own handling."""
    if (
        _terminated
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield  # a host that handles SIGTERM itself (or a worker thread) keeps its own handling
        return

    def handler(signum, frame):
        global _terminated
        _terminated = True  # from now on SIGTERM ends the process at once, even in a later run
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def mark_killed_runs(manifest: Mapping | None) -> Mapping | None:
    """The manifest with every earlier run still recorded ``running`` marked ``interrupted``: called with
    the folder's lock held, so no process is writing it any more (it was killed outright, e.g. kill -9).

    >>> mark_killed_runs({"runs": [{"status": "done"}, {"status": "running"}]})["runs"]
    [{'status': 'done'}, {'status': 'interrupted', 'killed': True}]
    """
    if not isinstance(manifest, Mapping) or not isinstance(manifest.get("runs"), list):
        return manifest
    runs = [
        dict(r, status="interrupted", killed=True) if isinstance(r, Mapping) and r.get("status") == "running" else r
        for r in manifest["runs"]
    ]
    return dict(manifest, runs=runs)


def _evaluate(
    config: EvalConfig,
    out: Path,
    progress: bool,
    *,
    clients: Mapping[str, LLMClient] | None,
    dataset: Dataset | None,
    retriever: Any,
    force_new: bool,
    command: Sequence[str] | None,
    lock: RunLock,
) -> dict:
    """evaluate() with the folder's lock held."""
    from lazymem import prompts
    from lazymem.pipeline import LazyMemPipeline

    config, cache_dir = resolve_cache(seeded(config))
    masker = secret_masker([config.pipeline.mpm, config.pipeline.answer, config.pipeline.judge])
    fingerprints = config_fingerprints(config)  # the current one first, then older versions' (still resumable)
    fingerprint = fingerprints[0]
    records_path, manifest_path = out / RECORDS_FILE, out / MANIFEST_FILE
    if dataset is None:
        from lazymem.data import load_dataset

        dataset = load_dataset(config.dataset, subset=config.subset)
    questions = select_questions(dataset, config)
    check_judge(questions, config.judge)

    old_manifest = mark_killed_runs(load_manifest(manifest_path))
    set_aside_to = None
    if force_new:
        dest = set_aside(out)
        if dest is not None:
            set_aside_to = dest.name
            if old_manifest:  # the history stays; each earlier run says where its results went
                old_manifest = dict(
                    old_manifest,
                    runs=[
                        r if r.get("moved_to") else dict(r, moved_to=dest.name) for r in old_manifest.get("runs") or []
                    ],
                )
    identity = run_identity(fingerprints, dataset.sha256, prompts.prompt_hashes())
    kept, truncated = resume(out, identity, old_manifest, masker)
    done = {r.question_id for r in kept}
    attempts = Counter(r["question_id"] for r in read_jsonl(out / ERRORS_FILE))
    todo = [q for q in questions if q.id not in done]

    run_id = uuid.uuid4().hex[:12]
    run_info = {
        "run_id": run_id,
        "start": now(),
        "end": None,
        "status": "running",
        "pid": os.getpid(),
        "host": (lock.info or {}).get("host"),
        "command": list(command if command is not None else sys.argv),
        "questions_todo": len(todo),
        "resumed_ok": len(done & {q.id for q in questions}),
        "dropped_truncated_line": truncated,
        "force_new": force_new,
        "set_aside_to": set_aside_to,
        "dataset_sha256": dataset.sha256,
        "config_sha256": fingerprint,
    }
    p = config.pipeline
    manifest = new_manifest(config, dataset, len(questions), fingerprint, cache_dir, clients, old_manifest, run_info)
    write_atomic(manifest_path, masker.dumps(manifest, indent=2) + "\n")

    pipeline = LazyMemPipeline(p, clients=clients, retriever=retriever)
    selected_ids = {q.id for q in questions}
    scores = RunningScore([r for r in kept if r.question_id in selected_ids], config.judge)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc=f"eval {p.method}", unit="q", dynamic_ncols=True)
        bar.set_postfix_str(scores.text())
    status = "interrupted"
    write_lock = threading.Lock()
    try:
        if todo:
            pipeline.warm_up()
        with open(records_path, "a", encoding="utf-8") as f:

            def write(rec: RunRecord) -> None:
                rec = rec.with_(
                    run_id=run_id,
                    config_sha256=fingerprint,
                    attempt=attempts[rec.question_id] + 1,
                    recorded_at=now(),
                )
                line = masker.dumps(rec.to_json()) + "\n"
                with write_lock:
                    append_synced(f, line)  # a kill -9 after this loses nothing finished
                scores.add(rec)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix_str(scores.text())

            if config.workers == 1:
                for q in todo:
                    write(run_question(pipeline, dataset, q, config))
            else:
                import concurrent.futures

                with concurrent.futures.ThreadPoolExecutor(config.workers) as ex:
                    futures = [ex.submit(run_question, pipeline, dataset, q, config) for q in todo]
                    try:
                        for fut in concurrent.futures.as_completed(futures):
                            write(fut.result())
                    except BaseException:
                        for fut in futures:
                            fut.cancel()
                        raise
        status = "done"
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, SIGTERM (sigterm_exits): status stays "interrupted"
        raise
    except BaseException as e:  # e.g. a model that cannot load: the run stops, the manifest says why
        status = "failed"
        run_info["error"] = f"{type(e).__name__}: {e}"[:2000]
        raise
    finally:
        pipeline.close()
        if bar is not None:
            bar.close()
        records, _ = load_records(records_path)
        summary = summarize(records, config.judge, selected=[q.id for q in questions], file=str(records_path))
        summary["dataset"] = dataset.name
        if dataset.errata_sha256:  # LoCoMo with errata: every measure also against the corrected gold
            summary["audited"] = audited_summary(records, dataset, selected=[q.id for q in questions])
        summary["run_dir"] = str(out)
        if config.baseline:
            base = read_json(Path(config.baseline) / SUMMARY_FILE)
            summary["baseline"] = (
                compare_with_baseline(summary, base, config.baseline)
                if base is not None
                else {"baseline_dir": config.baseline, "error": "no summary.json there"}
            )
        write_atomic(out / SUMMARY_FILE, masker.dumps(summary, indent=2) + "\n")
        write_atomic(out / WINDOWS_FILE, "".join(masker.dumps(w) + "\n" for w in window_lines(records)))
        run_info.update(end=now(), status=status, questions_done=scores.n_new, errors=scores.n_new_errors)
        close_manifest(manifest, run_info, status, summary)
        write_atomic(manifest_path, masker.dumps(manifest, indent=2) + "\n")
    return summary
