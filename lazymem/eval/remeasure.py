"""The memory's own measures for runs made before they existed, without rerunning a model.

``lazymem remeasure RUN_DIR [RUN_DIR ...]`` reads each run folder's manifest
(its dataset spec and sha256), loads that dataset, and computes ``memory_measures``
(``lazymem.eval.memory_measures.measure_record``: evidence recall, answer recall in memory)
for every record that has a memory but no measures; ``records.jsonl`` is rewritten atomically
(nothing else in a record changes) and ``summary.json`` gets the measures' summary. It holds
the folder's run lock meanwhile, refuses what ``lazymem eval`` refuses to resume
(``runfiles.check_run_folder``: records of runs the manifest does not list, and a dataset whose
sha256 differs from the manifest's or is unknown: the records would be measured against other gold), and a record whose question is not in
the dataset is a LoadError naming it. Records that already carry measures are left as they
are, so a second call changes nothing.

``--errata PATH`` (LoCoMo runs): also loads the run's dataset with that errata file
(``lazymem.data.locomo``) and writes ``summary.json``'s ``audited`` object
(``lazymem.eval.memory_measures.audited_summary``: every memory measure against the corrected
evidence and answer, F1 and judge accuracy on all and on clean questions, the ceiling); the records
do not change. A run made with errata in its spec gets the object again from those.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lazymem.errors import ConfigError, LoadError
from lazymem.eval.memory_measures import audited_summary, measure_record
from lazymem.eval.records import MeasuresRecord, RunRecord
from lazymem.eval.runfiles import (
    MANIFEST_FILE,
    RECORDS_FILE,
    SUMMARY_FILE,
    RunLock,
    check_run_folder,
    load_records,
    read_json,
)
from lazymem.eval.scoring import summarize
from lazymem.files import write_json, write_jsonl


def _needs(rec: RunRecord) -> bool:
    return rec.memory_measures is None and isinstance(rec.memory, str)


def errata_spec(spec: str, errata: str | Path) -> str:
    """A dataset SPEC with this errata file in place of any it names.

    >>> errata_spec("d/locomo10.json#paper?errata=old.json", "new.json")
    'd/locomo10.json#paper?errata=new.json'
    """
    from lazymem.data.datasets import split_options

    return f"{split_options(spec)[0]}?errata={errata}"


def remeasure(run_dir: str | Path, errata: str | Path | None = None) -> dict:
    """Add memory measures to one run folder's records, and with ``errata`` (or errata in the run's spec)
    the summary's ``audited`` object; returns {"measured": n, "kept": n, "errors": n} and, with errata,
    "audited": the questions the errata audit."""
    from lazymem.data import load_dataset
    from lazymem.data.datasets import split_options
    from lazymem.eval.report import read_manifest

    d = Path(run_dir)
    manifest = read_manifest(d / MANIFEST_FILE)
    ds = manifest.get("dataset") or {}
    if not ds.get("spec"):
        raise LoadError(str(d / MANIFEST_FILE), None, "dataset.spec", "missing: the run's dataset is unknown")
    with RunLock(d):
        records, torn = load_records(d / RECORDS_FILE)
        if torn:  # rewriting would lose that line: resuming the run completes or redoes it first
            raise LoadError(
                str(d / RECORDS_FILE),
                f"line {len(records) + 1}",
                None,
                "the last line is cut off (an interrupted run): resume it before remeasuring",
            )
        check_run_folder(d, manifest, records, {})  # every record is one of the folder's runs
        todo = [r for r in records if _needs(r)]
        counts = {"measured": 0, "kept": len(records) - len(todo), "errors": 0}
        errata = errata if errata is not None else split_options(ds["spec"])[1].get("errata")
        if not todo and errata is None:
            return counts
        dataset = load_dataset(ds["spec"], ds.get("subset"))
        # what eval refuses to resume, remeasure refuses to measure: other (or unknown) dataset bytes
        check_run_folder(d, manifest, records, {"dataset_sha256": dataset.sha256})
        questions = {q.id: q for q in dataset.questions}
        for i, rec in enumerate(records):
            if not _needs(rec):
                continue
            q = questions.get(rec.question_id)
            if q is None:
                raise LoadError(
                    str(d / RECORDS_FILE),
                    f"record {i + 1}",
                    "question_id",
                    f"{rec.question_id!r} is not a question of {ds['spec']}",
                )
            try:
                measures = MeasuresRecord.from_json(measure_record(rec, q, dataset.history(q)).to_dict())
                records[i] = rec.with_(memory_measures=measures).without("memory_measures_error")
                counts["measured"] += 1
            except Exception as e:  # as the runner does: recorded, never a silent 0
                records[i] = rec.with_(memory_measures_error=f"{type(e).__name__}: {e}")
                counts["errors"] += 1
        if counts["measured"] or counts["errors"]:
            write_jsonl(d / RECORDS_FILE, [r.to_json() for r in records])
        summary = read_json(d / SUMMARY_FILE)
        if summary is not None and todo:
            fresh = summarize(records, (manifest.get("config") or {}).get("judge") or "none")
            summary["memory_measures"] = fresh.get("memory_measures")
        if errata is not None:
            checked = load_dataset(errata_spec(ds["spec"], errata), ds.get("subset"))
            try:
                audited = audited_summary(records, checked)
            except ValueError as e:
                raise LoadError(str(d / RECORDS_FILE), None, "question_id", str(e)) from None
            counts["audited"] = audited["questions"]
            summary = {} if summary is None else summary
            summary["audited"] = audited
        if summary is not None and (todo or errata is not None):
            write_json(d / SUMMARY_FILE, summary, indent=2)
    return counts


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``lazymem remeasure``'s arguments."""
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="lazymem eval run folders")
    parser.add_argument(
        "--errata",
        metavar="PATH",
        help="a LoCoMo errata file: add summary.json's audited measures (corrected evidence and answers)",
    )
    return parser


def run_from_args(args: argparse.Namespace) -> int:
    """Remeasure every run folder ``args.run_dirs`` names; 2 at the first bad one."""
    for run_dir in args.run_dirs:
        try:
            c = remeasure(run_dir, getattr(args, "errata", None))
        except (LoadError, ConfigError, OSError) as e:
            print(f"remeasure: {run_dir}: {e}", file=sys.stderr)
            return 2
        audited = f", audited {c['audited']} questions" if "audited" in c else ""
        print(f"{run_dir}: measured {c['measured']}, already measured {c['kept']}, errors {c['errors']}{audited}")
    return 0
