"""Question shards: one cell's questions in K disjoint parts, each run on its own, merged back into one run.

``EvalConfig.shard = "i/K"`` (``lazymem eval --shard i/K``) keeps the i-th of K parts of the selected
questions (``shard_questions``: by question id, every K-th from i). Each part is its own job and run
folder; ``merge_runs`` (``lazymem merge RUN_DIR... --out DIR``) combines the K folders into one, as the
unsharded run would have written it, only when they belong together: the same config fingerprint,
question selection, dataset sha256 and prompt hashes, every shard finished with every record ok, and
their questions disjoint and together exactly the unsharded selection. Otherwise it refuses with a
ConfigError naming what differs and which folders. The merged folder resumes under ``lazymem eval``
with the unsharded config (nothing left to do); its manifest says where its records came from
(``merged_from``: run folder, shard, run ids, questions of each part).

>>> [shard_questions(list("abcdefg"), i, 3) for i in range(3)]
[['a', 'd', 'g'], ['b', 'e'], ['c', 'f']]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lazymem.errors import ConfigError, path_text
from lazymem.eval.config import (  # parse_shard, shard_questions: the shard API, here too
    EvalConfig,
    config_fingerprints,
    parse_shard,
    select_questions,
    shard_questions,  # noqa: F401
)
from lazymem.eval.memory_measures import audited_summary
from lazymem.eval.provenance import close_manifest, new_manifest
from lazymem.eval.records import RunRecord
from lazymem.eval.runfiles import (
    ERRORS_FILE,
    MANIFEST_FILE,
    RECORDS_FILE,
    SUMMARY_FILE,
    WINDOWS_FILE,
    RunLock,
    RunLockedError,
    check_records_belong,
    latest_records,
    load_manifest,
    load_records,
    manifest_identity,
    read_json,
    secret_masker,
    window_lines,
    write_atomic,
)
from lazymem.eval.scoring import compare_with_baseline, summarize, summary_text
from lazymem.runinfo import now

if TYPE_CHECKING:
    from lazymem.records import Dataset

# EvalConfig fields left out of the fingerprint that decide the merged run's questions or summary: the shards
# must agree on them (``shard`` itself aside).
SELECTION = ("split", "split_seed", "ids", "types", "limit", "stratified", "baseline")


def shard_arg(text: str) -> str:
    """An argparse ``type=`` for ``--shard i/K`` (argparse then exits 2 with a usage line).

    >>> shard_arg("0/2")
    '0/2'
    >>> shard_arg("2/2")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --shard='2/2': must be 'i/K' with K >= 1 and 0 <= i < K, e.g. '0/4'
    """
    try:
        i, k = parse_shard(text, "--shard")
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return f"{i}/{k}"


def shard_names(k: int) -> list[str]:
    """The K shard specs of a cell split in K, for ``EvalConfig.shard``.

    >>> shard_names(3)
    ['0/3', '1/3', '2/3']
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ConfigError(f"shards={k!r}: must be an integer >= 1")
    return [f"{i}/{k}" for i in range(k)]


# --- merging -----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Part:
    """One run folder to merge: its manifest, its (unsharded) config and its latest records by question id."""

    run_dir: Path
    manifest: dict
    config: EvalConfig
    records: dict[str, RunRecord]

    def provenance(self) -> dict:
        """Its entry in the merged manifest's ``merged_from``."""
        run_ids = list(dict.fromkeys(r.run_id for r in self.records.values()))
        return {
            "run_dir": str(self.run_dir),
            "shard": (self.manifest.get("config") or {}).get("shard"),
            "run_ids": run_ids,
            "questions": len(self.records),
            "end": self.manifest.get("end"),
            "git_commit": self.manifest.get("git_commit"),
        }


def _refuse(what: str) -> ConfigError:
    return ConfigError(f"refusing to merge: {what}")


def _read_part(d: Path) -> Part:
    """A finished shard folder (its lock held by the caller), or a refusal saying why it is not one."""
    m = load_manifest(d / MANIFEST_FILE)
    if not isinstance(m, dict) or not isinstance(m.get("config"), Mapping):
        raise _refuse(f"{d} has no readable {MANIFEST_FILE}: not a lazymem eval run folder")
    status = m.get("status")
    if status != "done":
        why = {
            "running": "its manifest says running, but nobody holds its lock: it was killed; rerun it to finish",
            "done_with_errors": "some of its questions failed; rerun it to redo them",
        }
        raise _refuse(
            f"{d} is not finished: status {status!r}"
            + (f" ({why[status]})" if status in why else "; rerun it to finish")
        )
    try:
        config = dataclasses.replace(EvalConfig.from_dict(m["config"]), shard=None)
    except (ConfigError, TypeError) as e:
        raise _refuse(f"{d / MANIFEST_FILE}: its config does not load: {e}") from None
    if m.get("config_sha256") not in config_fingerprints(config):
        raise _refuse(
            f"{d / MANIFEST_FILE}: its config does not give its config_sha256 "
            f"{str(m.get('config_sha256'))[:12]} (edited, or a secret in it redacted)"
        )
    records, truncated = load_records(d / RECORDS_FILE)
    check_records_belong(d / RECORDS_FILE, records, m)
    latest = latest_records(records)
    bad = [i for i, r in latest.items() if not r.ok]
    if truncated or bad:  # no records at all is fine: a shard may select none (more shards than questions)
        what = "its last record is cut off" if truncated else f"{len(bad)} record(s) not ok, e.g. {bad[:3]}"
        raise _refuse(f"{d} is not finished: {what}; rerun it to finish")
    return Part(d, m, config, latest)


def _differences(parts: Sequence[Part]) -> list[str]:
    """What the parts disagree on, each as 'what: value in [folders]; value in [folders]'."""

    def sel(p: Part) -> dict:
        c = p.config.to_dict()
        return {k: c[k] for k in SELECTION}

    checks = {
        "config_sha256": lambda p: manifest_identity(p.manifest)["config_sha256"],
        "dataset sha256": lambda p: manifest_identity(p.manifest)["dataset_sha256"],
        "prompt hashes": lambda p: manifest_identity(p.manifest)["prompt_hashes"],
    }
    checks.update({f"EvalConfig.{k}": (lambda p, k=k: sel(p)[k]) for k in SELECTION})
    out = []
    for what, value in checks.items():
        groups: dict[str, list[str]] = {}
        for p in parts:
            v = value(p)
            shown = (
                v[:12]
                if isinstance(v, str) and len(v) == 64
                else repr(v)
                if not isinstance(v, dict)
                else "{" + ", ".join(f"{n}: {str(h)[:12]}" for n, h in sorted(v.items())) + "}"
            )
            groups.setdefault(shown, []).append(str(p.run_dir))
        if len(groups) > 1:
            out.append(
                f"{what} differs: "
                + "; ".join(f"{v} in {dirs}" for v, dirs in groups.items())
                + (_config_keys(parts) if what == "config_sha256" else "")
            )
    return out


def _flat(d: Mapping, head: str = "") -> dict[str, str]:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{head}{k}.") if isinstance(v, Mapping) else {f"{head}{k}": json.dumps(v, default=str)})
    return out


def _config_keys(parts: Sequence[Part]) -> str:
    """' (config keys that differ: a.b: 3 / 4, ...)': the recorded configs' differences, cache folders and
    the question selection left out."""
    flat = [_flat(p.config.to_dict()) for p in parts]
    keys = sorted(
        k
        for k in set().union(*flat)
        if not k.endswith("cache_dir") and k not in SELECTION and len({f.get(k) for f in flat}) > 1
    )
    shown = [f"{k}: {' / '.join(dict.fromkeys(str(f.get(k)) for f in flat))}" for k in keys[:6]]
    return f" (config keys that differ: {', '.join(shown)})" if shown else ""


def _check_questions(parts: Sequence[Part], wanted: Sequence[str]) -> None:
    """Refuse unless the parts' questions are disjoint and together exactly ``wanted``."""
    owner: dict[str, Path] = {}
    overlap: dict[tuple[Path, Path], list[str]] = {}
    for p in parts:
        for qid in p.records:
            if qid in owner:
                overlap.setdefault((owner[qid], p.run_dir), []).append(qid)
            else:
                owner[qid] = p.run_dir
    problems = [f"{len(ids)} question(s) in both {a} and {b}, e.g. {ids[:3]}" for (a, b), ids in overlap.items()]
    extra = [q for q in owner if q not in set(wanted)]
    if extra:
        problems.append(
            f"{len(extra)} question(s) not in the unsharded selection, e.g. {extra[:3]} "
            f"(in {sorted({str(owner[q]) for q in extra})})"
        )
    missing = [q for q in wanted if q not in owner]
    if missing:
        shards = [(p.manifest.get("config") or {}).get("shard") for p in parts]
        ks = {parse_shard(s)[1] for s in shards if s}
        hint = ""
        if len(ks) == 1 and None not in shards:
            k = ks.pop()
            hint = f"; shard(s) not given: {sorted(set(shard_names(k)) - set(shards))}"
        problems.append(
            f"{len(missing)} of the {len(wanted)} selected question(s) in no folder, e.g. {missing[:3]}{hint}"
        )
    if problems:
        raise _refuse("the folders' questions must be disjoint and complete: " + "; ".join(problems))


def _same_merge(old: Mapping | None, merged_from: list[dict]) -> bool:
    """Whether an existing manifest of the output folder records this very merge."""

    def key(entries: Any) -> Any:  # the same folders, runs and questions (a shard resumed since still counts)
        return (
            [
                {k: e.get(k) for k in ("run_dir", "shard", "run_ids", "questions")} if isinstance(e, Mapping) else e
                for e in entries
            ]
            if isinstance(entries, list)
            else None
        )

    if not isinstance(old, Mapping):
        return False
    runs = old.get("runs") if isinstance(old.get("runs"), list) else []
    return key(merged_from) in [
        key(old.get("merged_from")),
        *(key(r.get("merged_from")) for r in runs if isinstance(r, Mapping)),
    ]


def merge_runs(
    run_dirs: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    progress: bool = False,
    *,
    dataset: Dataset | None = None,
    command: Sequence[str] | None = None,
) -> dict:
    """Merge the run folders of a cell's shards into ``out``; returns the merged summary (also in summary.json).

    Writes records.jsonl (in the unsharded selection's order, each line as in its shard), errors.jsonl
    (the shards' earlier failed attempts), windows.jsonl, summary.json (as ``evaluate`` computes it for
    the unsharded run) and manifest.json (the unsharded run's, with ``merged_from``). Holds the lock of
    ``out`` and of every shard meanwhile. ``dataset``: the loaded dataset (else loaded from the manifests'
    spec). ``command``: recorded in the manifest (default sys.argv).

    Raises:
        ConfigError: the folders do not belong together or are not finished (the message names what
            differs and which folders), or ``out`` holds records of something else.
    """
    dirs = [Path(d).resolve() for d in run_dirs]
    target = Path(out).resolve()
    if not dirs:
        raise _refuse("no run folders given")
    twice = sorted({str(d) for d in dirs if dirs.count(d) > 1})
    if twice:
        raise _refuse(f"{twice} given more than once: its questions would overlap")
    if target in dirs:
        raise _refuse(f"the output folder {target} is one of the folders to merge")
    with contextlib.ExitStack() as locks:
        parts = []
        for d in dirs:
            if not d.is_dir():
                raise _refuse(f"{d} is not a folder")
            try:
                locks.enter_context(RunLock(d))
            except RunLockedError as e:
                raise _refuse(f"{d} is still running: {e}") from None
            parts.append(_read_part(d))
            if progress:
                print(f"lazymem merge: {d}: {len(parts[-1].records)} records", file=sys.stderr, flush=True)
        differences = _differences(parts)
        if differences:
            raise _refuse("; ".join(differences))
        first = parts[0]
        config, m0 = first.config, first.manifest
        spec = m0.get("dataset") or {}
        if dataset is None:
            from lazymem.data import load_dataset

            dataset = load_dataset(spec.get("spec") or config.dataset, subset=spec.get("subset"))
        if dataset.sha256 != spec.get("sha256"):
            raise _refuse(
                f"the dataset {spec.get('spec') or dataset.name!r} is now sha256 {dataset.sha256[:12]}, "
                f"the folders' records were made on {str(spec.get('sha256'))[:12]}"
            )
        questions = select_questions(dataset, config)
        wanted = [q.id for q in questions]
        _check_questions(parts, wanted)
        by_id = {qid: r for p in parts for qid, r in p.records.items()}
        records = [by_id[qid] for qid in wanted]
        merged_from = [p.provenance() for p in parts]

        lock = locks.enter_context(RunLock(target))  # only now: a refused merge creates no output folder
        old = load_manifest(target / MANIFEST_FILE)
        held = target / RECORDS_FILE
        if held.exists() and held.stat().st_size > 0 and not _same_merge(old, merged_from):
            raise _refuse(f"{target} already holds records (not of this merge); give an empty output folder")
        masker = secret_masker([config.pipeline.mpm, config.pipeline.answer, config.pipeline.judge])
        errors = [r for p in parts for r in load_records(p.run_dir / ERRORS_FILE)[0]]
        summary = summarize(records, config.judge, selected=wanted)
        summary["dataset"] = dataset.name
        if dataset.errata_sha256:  # LoCoMo with errata: every measure also against the corrected gold
            summary["audited"] = audited_summary(records, dataset, selected=wanted)
        summary["run_dir"] = str(Path(out))
        if config.baseline:
            base = read_json(Path(config.baseline) / SUMMARY_FILE)
            summary["baseline"] = (
                compare_with_baseline(summary, base, config.baseline)
                if base is not None
                else {"baseline_dir": config.baseline, "error": "no summary.json there"}
            )
        run_info = {
            "run_id": uuid.uuid4().hex[:12],
            "start": now(),
            "end": None,
            "status": "running",
            "pid": os.getpid(),
            "host": (lock.info or {}).get("host"),
            "command": list(command if command is not None else sys.argv),
            "questions_todo": 0,
            "resumed_ok": len(records),
            "dropped_truncated_line": False,
            "force_new": False,
            "set_aside_to": None,
            "dataset_sha256": dataset.sha256,
            "config_sha256": m0["config_sha256"],
            "merged_from": merged_from,
        }
        injected = {name: None for p in parts for name in p.manifest.get("injected_clients") or ()}
        manifest = new_manifest(
            config,
            dataset,
            len(questions),
            m0["config_sha256"],
            m0.get("llm_cache_dir"),
            injected,
            old if _same_merge(old, merged_from) else None,
            run_info,
        )
        manifest["prompt_hashes"] = m0.get("prompt_hashes")  # the records' prompts, not this process's
        manifest["merged_from"] = merged_from
        write_atomic(held, "".join(masker.dumps(r.to_json()) + "\n" for r in records))
        if errors:
            write_atomic(target / ERRORS_FILE, "".join(masker.dumps(r.to_json()) + "\n" for r in errors))
        else:
            (target / ERRORS_FILE).unlink(missing_ok=True)
        write_atomic(target / WINDOWS_FILE, "".join(masker.dumps(w) + "\n" for w in window_lines(records)))
        write_atomic(target / SUMMARY_FILE, masker.dumps(summary, indent=2) + "\n")
        run_info.update(end=now(), status="done", questions_done=0, errors=0)
        close_manifest(manifest, run_info, "done", summary)
        write_atomic(target / MANIFEST_FILE, masker.dumps(manifest, indent=2) + "\n")
    return summary


# --- the command line --------------------------------------------------------------------------------

HELP = "merge the run folders of a cell's question shards (lazymem eval --shard i/K) into one run folder"


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``lazymem merge``'s arguments; returns the parser.

    >>> add_arguments(argparse.ArgumentParser()).parse_args(["a", "b", "--out", "m"]).run_dirs
    ['a', 'b']
    """
    parser.description = HELP + (
        ": only when they share the config fingerprint, question selection, dataset "
        "sha256 and prompt hashes, are finished with every record ok, and their questions "
        "are disjoint and together the unsharded selection"
    )
    parser.epilog = "exit status: 0 merged; 2 refused (one line naming what differs and which folders)"
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="the shards' lazymem eval run folders")
    parser.add_argument(
        "--out", type=path_text, required=True, help="the merged run folder (empty, or this same merge's)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no line per folder read")
    parser.add_argument("--json", action="store_true", help="print the merged summary as JSON")
    return parser


def run_from_args(args: argparse.Namespace) -> int:
    """Run parsed ``lazymem merge`` arguments; a refusal raises ConfigError (the CLI prints it, exit 2)."""
    summary = merge_runs(args.run_dirs, args.out, progress=not args.no_progress)
    if args.json:
        json.dump(summary, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print(summary_text(summary))
        print(f"records: {Path(args.out) / RECORDS_FILE} (merged from {len(args.run_dirs)} folders)")
    return 0
