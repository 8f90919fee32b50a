"""Several methods on the same questions: one evaluation per (set, row), then one table.

``EvalTableConfig`` names a base recipe (an eval YAML), the question sets (overrides such as
``dataset``, ``subset``, ``limit``) and the rows (overrides such as ``pipeline.method=rag`` or
``pipeline.mpm.adapter=lazymem-135m``). ``run_eval_table`` runs each cell with the ordinary
runner (``evaluate``: resumable, its records and manifest in ``<output_dir>/<set>/<row>``; a
finished cell costs nothing), then writes ``table.md`` / ``table.json`` with, per row:

- ``all_gold_shown`` (All@k of the windows: the share of questions whose every gold message the
  memory step saw), ``gate_fmt`` (the paper's Gate Fmt.), ``rewritten_rate`` (KEEPs whose content is
  not a verbatim span of their message), ``gold_keep_recall`` and ``nongold_drop_rate`` of the
  messages the windows showed (lazymem / extractive rows);
- ``evidence_recall`` (the share of a question's gold messages in its memory) and
  ``answer_recall_in_memory`` (the share of the gold answer's tokens in the memory text): measures
  of the memory itself, for every method (lazymem.eval.memory_measures; "-" for runs made before);
- ``memory_tokens`` (mean answer-context tokens, Qwen3) and ``ratio_to_ref`` (to the row named
  ``reference``, e.g. RAG Top50: the paper's compression ratio);
- ``locomo_f1`` (LoCoMo's official token F1) or, without categories, ``answer_f1`` (a proxy);
- ``processing_s`` (mean seconds of memory processing per question, cached calls excluded by
  running fresh) and ``questions``;
- with LoCoMo errata (a summary's ``audited`` object, ``lazymem.eval.memory_measures.audited_summary``;
  only then): ``evidence_recall_audited``, ``gold_keep_recall_audited`` and
  ``answer_recall_in_memory_audited`` (against the corrected evidence and answers),
  ``locomo_f1_clean`` and ``judge_accuracy_clean`` (on the questions without an erratum),
  ``flagged`` (questions with an erratum) and ``ceiling`` (the share whose published answer is right);
- with every call's usage (a summary's ``usage`` object, ``lazymem.eval.usage``; only then):
  ``mpm_tokens_in`` / ``mpm_tokens_out`` (the memory-processing model's tokens read and written a
  question, its own tokenizer) and ``all_call_tokens`` (every call's tokens in and out a question: MPM,
  answer, Mem0's ingestion spread over its questions; the judge not included).

>>> row = {"construction": {"gate_fmt": 1.0, "gold_keep_recall": 0.5, "n_messages": 10, "n_gold": 2,
...        "n_kept": 3, "n_gold_kept": 1}, "memory_tokens": {"mean": 50.0}, "counts": {"ok": 4}}
>>> c = table_row(row, {"memory_tokens": {"mean": 200.0}})
>>> c["nongold_drop_rate"], c["ratio_to_ref"]
(0.75, 0.25)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError
from lazymem.eval.paper import NOT_IN_PAPER, not_in_paper
from lazymem.fields import h

COLUMNS = (
    "questions",
    "judge_accuracy",
    "judge_errors",
    "judge_false_accept",
    "judge_false_reject",
    "all_gold_shown",
    "gate_fmt",
    "rewritten_rate",
    "gold_keep_recall",
    "nongold_drop_rate",
    "evidence_recall",
    "answer_recall_in_memory",
    "evidence_recall_audited",
    "gold_keep_recall_audited",
    "answer_recall_in_memory_audited",
    "memory_tokens",
    "ratio_to_ref",
    "locomo_f1",
    "locomo_f1_clean",
    "judge_accuracy_clean",
    "answer_f1",
    "flagged",
    "ceiling",
    "processing_s",
    "mpm_tokens_in",
    "mpm_tokens_out",
    "all_call_tokens",
)


RESERVED_NAMES = ("table.md", "table.json")  # the table's own files in output_dir (lazymem.sweep.TABLE_FILES)
MARK_TEXTS = {
    "recomputed": "recomputed: its earlier results were of other inputs (set aside in its folder's previous-<time>/)",
    "stale": "stale, not shown: its results are of other inputs and `only` left it out (rerun it, e.g. "
    "--set only=[row])",
    "failed": "failed as a job (lazymem jobs <output_dir> shows its log and the command that reruns it)",
}
# the notes under a table, per mark


def check_name(name: Any, where: str) -> str:
    """A set or row name, which names a folder under output_dir: a non-empty string that is one path
    component (no ``/``, ``\\``, NUL, ``.`` or ``..``; so never absolute and never outside output_dir).

    >>> check_name("rag_top50", "EvalTableConfig.rows")
    'rag_top50'
    >>> check_name("../x", "EvalTableConfig.rows")
    Traceback (most recent call last):
    ...
    lazymem.errors.ConfigError: EvalTableConfig.rows: name '../x' must be one folder name (no '/', '\\', NUL, '.' or '..'): it names the cell's folder <output_dir>/<set>/<row>
    """  # noqa: E501  (a doctest's expected output is one line)
    if not isinstance(name, str):
        raise ConfigError(
            f"{where}: name {name!r} is a {type(name).__name__}, not a string; names are folder names: "
            f"quote it in the YAML ('{name}': ...)"
        )
    if (
        not name.strip()
        or any(c in name for c in "/\\\0")
        or name in (".", "..")
        or name in RESERVED_NAMES
        or name != name.strip()
    ):
        raise ConfigError(
            f"{where}: name {name!r} must be one folder name (no '/', '\\', NUL, '.' or '..'): "
            "it names the cell's folder <output_dir>/<set>/<row>"
            + (f"; {', '.join(RESERVED_NAMES)} are the table's own files" if name in RESERVED_NAMES else "")
        )
    return name


def _overrides(value: Any, where: str) -> tuple[str, ...]:
    """A cell's overrides as KEY=VALUE strings: a mapping ({dotted.key: value}) or a list of strings."""
    if isinstance(value, Mapping):
        return tuple(f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in value.items())
    if isinstance(value, (list, tuple)) and all(isinstance(x, str) and "=" in x for x in value):
        return tuple(value)
    raise ConfigError(f"{where}: overrides must be a mapping of dotted keys or a list of KEY=VALUE strings")


def apply_table_sets(data: Mapping, sets: Sequence[str]) -> dict:
    """A table config's mapping with ``--set key=value`` overrides applied. A set or row holds its overrides
    as dotted keys, so ``rows.R.pipeline.mpm.extra_body.decode=batched`` adds the one key
    ``pipeline.mpm.extra_body.decode`` to row R, after the row's own keys: it changes that setting and leaves
    the rest of the row (a nested ``pipeline`` mapping would replace the row's whole pipeline section).

    >>> apply_table_sets({"rows": {"r": {"pipeline.mpm.extra_body": {"a": 1}}}},
    ...                  ["rows.r.pipeline.mpm.extra_body.b=2", "only=[r]"])
    {'rows': {'r': {'pipeline.mpm.extra_body': {'a': 1}, 'pipeline.mpm.extra_body.b': 2}}, 'only': ['r']}
    """
    from lazymem.eval.config import apply_overrides
    from lazymem.yamlio import load_yaml

    out, rest = dict(data), []
    for item in sets:
        key, sep, raw = item.partition("=")
        parts = key.strip().split(".")
        if not sep or parts[0] not in ("rows", "sets") or len(parts) < 3:
            rest.append(item)
            continue
        group = dict(out.get(parts[0]) or {})
        if parts[1] not in group:
            raise ConfigError(
                f"--set {item!r}: no {parts[0][:-1]} {parts[1]!r}; the table's {parts[0]}: {', '.join(group) or '(none)'}"
            )
        cell = group[parts[1]] or {}
        if not isinstance(cell, Mapping):
            raise ConfigError(f"--set {item!r}: {parts[0]}.{parts[1]} is a list of KEY=VALUE strings; edit the file")
        try:
            value = load_yaml(raw)
        except ConfigError as e:
            raise ConfigError(f"--set {item!r}: the value, {e}") from None
        dotted = ".".join(parts[2:])
        group[parts[1]] = {**{k: v for k, v in cell.items() if k != dotted}, dotted: value}
        out[parts[0]] = group
    return apply_overrides(out, rest)


@dataclass(frozen=True)
class EvalTableConfig:
    """Rows x sets over one base recipe; the keys of configs/tables/*.yaml."""

    base: str = field(default="", metadata=h("the base eval recipe (YAML) every cell starts from"))
    title: str = field(default="", metadata=h("the result page's heading (table.md)"))
    description: str = field(
        default="",
        metadata=h("what a reader needs to interpret the numbers: the questions, the rows, caveats (table.md)"),
    )
    sets: Mapping[str, Any] = field(default_factory=dict, metadata=h("name -> overrides choosing the questions"))
    rows: Mapping[str, Any] = field(default_factory=dict, metadata=h("name -> overrides choosing the method"))
    reference: str | None = field(default=None, metadata=h("the row memory tokens are compared with (RAG Top50)"))
    only: tuple[str, ...] = field(default=(), metadata=h("run only these rows (finished cells are always shown)"))
    output_dir: str = field(default="runs/eval_table", metadata=h("<set>/<row>/ run folders, table.md/json"))
    executor: Any = field(
        default=None,
        metadata=h(
            "where cells run: inline (default), local or slurm, or lazymem.jobs.JobsConfig keys (partition, ...)"
        ),
    )
    shards: int = field(default=1, metadata=h("jobs per cell (local/slurm), each a part of its questions, merged"))
    not_in_paper: tuple[str, ...] = field(
        default=(),
        metadata=h(
            "rows the paper's table does not have (the project's own systems or models): marked 'ours, not in the paper'"
        ),
    )
    judge_audit: Any = field(
        default=None,
        metadata=h(
            "a judge_audit.json of this table's judge (lazymem judge-audit --config <this table> [--table-set SET]), "
            "or set -> that file: its false-accept and false-reject rates stand beside every judged cell whose judge "
            "it audited (judge_false_accept, judge_false_reject); a cell of another judge says so"
        ),
    )
    paper_systems_not_run: Mapping[str, str] = field(
        default_factory=dict,
        metadata=h(
            "systems of the paper's Table 1 this table cannot run -> why; the dry run and table.md show the paper's "
            "reported numbers for them (lazymem.eval.paper.REPORTED), labelled reported"
        ),
    )

    def __post_init__(self):
        from lazymem.eval.paper import REPORTED
        from lazymem.jobs import JobsConfig

        object.__setattr__(self, "executor", JobsConfig.of(self.executor, "EvalTableConfig.executor"))
        if type(self.shards) is not int or self.shards < 1:
            raise ConfigError(f"EvalTableConfig.shards: {self.shards!r} must be an integer >= 1")
        if self.shards > 1 and self.executor.inline:
            raise ConfigError(
                f"EvalTableConfig.shards={self.shards}: shards are jobs; choose executor local or slurm "
                "(--executor local)"
            )
        if not self.base or not isinstance(self.base, str):
            raise ConfigError(
                "EvalTableConfig.base: the base eval recipe (a configs/eval/*.yaml path) is required, "
                f"as one path (got {self.base!r})"
            )
        for name in ("title", "description"):
            if not isinstance(getattr(self, name), str):
                raise ConfigError(f"EvalTableConfig.{name}: expected text, got {getattr(self, name)!r}")
        for name in ("output_dir", "reference"):
            v = getattr(self, name)
            if not (isinstance(v, str) and v) and not (name == "reference" and v is None):
                raise ConfigError(f"EvalTableConfig.{name}: expected a non-empty string, got {v!r}")
        for name in ("sets", "rows"):
            v = getattr(self, name)
            if not (isinstance(v, Mapping) and v):
                raise ConfigError(f"EvalTableConfig.{name} must be a non-empty mapping of names to overrides")
            for k, o in v.items():
                check_name(k, f"EvalTableConfig.{name}")
                _overrides(o or {}, f"EvalTableConfig.{name}.{k}")
        if self.reference is not None and self.reference not in self.rows:
            raise ConfigError(f"EvalTableConfig.reference={self.reference!r} is not a row ({', '.join(self.rows)})")
        only = (self.only,) if isinstance(self.only, str) else tuple(self.only or ())
        if unknown := [r for r in only if r not in self.rows]:
            raise ConfigError(f"EvalTableConfig.only: unknown rows {unknown} (rows: {', '.join(self.rows)})")
        object.__setattr__(self, "only", only)
        ext = (self.not_in_paper,) if isinstance(self.not_in_paper, str) else tuple(self.not_in_paper or ())
        if unknown := [r for r in ext if r not in self.rows]:
            raise ConfigError(f"EvalTableConfig.not_in_paper: unknown rows {unknown} (rows: {', '.join(self.rows)})")
        object.__setattr__(self, "not_in_paper", ext)
        audits = self.judge_audit
        paths = audits.values() if isinstance(audits, Mapping) else () if audits is None else (audits,)
        if not all(isinstance(v, str) and v for v in paths):
            raise ConfigError(
                f"EvalTableConfig.judge_audit: a judge_audit.json path, or a mapping of set -> path, got {audits!r}"
            )
        if isinstance(audits, Mapping) and (unknown := [k for k in audits if k not in self.sets]):
            raise ConfigError(f"EvalTableConfig.judge_audit: unknown sets {unknown} (sets: {', '.join(self.sets)})")
        systems = self.paper_systems_not_run or {}
        if not isinstance(systems, Mapping) or not all(isinstance(v, str) for v in systems.values()):
            raise ConfigError(
                "EvalTableConfig.paper_systems_not_run: a mapping of the paper's system name -> why "
                f"it is not run (a string), got {systems!r}"
            )
        known = set(REPORTED["longmemeval"]) | set(REPORTED["locomo"])
        if unknown := [k for k in systems if k not in known]:
            raise ConfigError(
                f"EvalTableConfig.paper_systems_not_run: {unknown} are not systems of the paper's "
                f"Table 1 (known: {', '.join(sorted(known))})"
            )

    def judge_audits(self) -> dict[str, tuple[str, dict]]:
        """set -> (path, the judge_audit.json read and checked) standing beside its judged cells (sets without
        one left out); a file that is not a judge audit raises LoadError."""
        from lazymem.eval.judge_audit import read_result

        a = self.judge_audit
        paths = dict(a) if isinstance(a, Mapping) else {s: a for s in self.sets} if a else {}
        return {s: (path, read_result(path)) for s, path in paths.items()}

    def cell_overrides(self, set_name: str, row: str) -> list[str]:
        return [
            *_overrides(self.sets[set_name] or {}, f"sets.{set_name}"),
            *_overrides(self.rows[row] or {}, f"rows.{row}"),
        ]


def reported_only(systems: Mapping[str, str], dataset: str | None) -> list[dict]:
    """The paper's reported numbers for the Table 1 systems a table does not run, on ``dataset``'s benchmark.

    >>> reported_only({"LightMem": "no implementation here"}, "longmemeval_s_cleaned")
    [{'system': 'LightMem', 'why': 'no implementation here', 'mpm': 'Qwen3-32B', 'lj': 0.79, 'tokens': 2497}]
    """
    from lazymem.eval.paper import REPORTED, benchmark_of

    bench = benchmark_of(dataset)
    out = []
    for system, why in systems.items():
        rep = REPORTED.get(bench, {}).get(system) if bench else None
        out.append(
            {
                "system": system,
                "why": why,
                "mpm": rep["mpm"] if rep else None,
                "lj": rep["lj"] if rep else None,
                "tokens": rep["tokens"] if rep else None,
            }
        )
    return out


def reported_only_markdown(rows: Sequence[Mapping]) -> list[str]:
    """Lines under a set's table: the paper's systems not run here, with the paper's reported numbers."""
    if not rows:
        return []
    lines = ["Systems of the paper's Table 1 not run here (the paper's reported numbers, not measured):", ""]
    return [*lines, *(f"- {reported_line(r)}" for r in rows), ""]


def reported_line(r: Mapping) -> str:
    """One system of ``reported_only``: its name, the paper's numbers on the benchmark, why it is not run."""
    tokens = r["tokens"] if r["tokens"] is not None else "-"
    nums = (
        "not reported on this benchmark"
        if r["lj"] is None
        else (f"LJ {r['lj']:.2f}, memory tokens {tokens} (MPM {r['mpm']})")
    )
    return f"{r['system']}: {nums}; {r['why']}"


def table_row(summary: Mapping, reference: Mapping | None = None, extension: bool = False) -> dict:
    """The table's columns from one run summary (and the reference row's summary); ``extension``: a row
    the paper's table does not have (``EvalTableConfig.not_in_paper``), marked "ours, not in the paper"."""
    c = summary.get("construction") or {}
    rest = (c.get("n_messages") or 0) - (c.get("n_gold") or 0)
    tokens = (summary.get("memory_tokens") or {}).get("mean")
    ref = ((reference or {}).get("memory_tokens") or {}).get("mean")
    proc = ((summary.get("latency_s") or {}).get("processing") or {}).get("mean")
    measures = summary.get("memory_measures") or {}  # absent from summaries made before it existed
    counts = summary.get("counts") or {}
    notes = [NOT_IN_PAPER] if extension or not_in_paper(summary.get("method"), summary.get("dataset")) else []
    asked = counts.get("selected") or counts.get("recorded")
    if asked and (counts.get("ok") or 0) < asked:  # errors or unfinished: the means are over fewer questions
        notes.append(f"{counts.get('ok') or 0} of {asked} answered")
    acc = summary.get("accuracy") or {}
    if acc.get("judge_no_verdict"):  # a broken judge shows in its cell, never as wrong answers
        notes.append(f"{acc['judge_no_verdict']} judge replies with no verdict")
    return {
        "questions": counts.get("ok"),
        "judge_accuracy": acc.get("overall"),
        "judge_errors": acc.get("judge_errors") if acc else None,
        "all_gold_shown": c.get("all_gold_shown"),
        "gate_fmt": c.get("gate_fmt"),
        "rewritten_rate": c.get("rewritten_rate"),
        "gold_keep_recall": c.get("gold_keep_recall"),
        "nongold_drop_rate": (1 - (c["n_kept"] - c["n_gold_kept"]) / rest) if c and rest else None,
        "evidence_recall": (measures.get("evidence_recall") or {}).get("mean"),
        "answer_recall_in_memory": (measures.get("answer_recall_in_memory") or {}).get("mean"),
        "memory_tokens": tokens,
        "ratio_to_ref": tokens / ref if tokens is not None and ref else None,
        "locomo_f1": (summary.get("locomo_f1") or {}).get("overall"),
        "answer_f1": (summary.get("proxy") or {}).get("answer_f1"),
        "processing_s": proc,
        **audited_columns(summary.get("audited")),
        **usage_columns(summary.get("usage")),
        # Oracle Session on LoCoMo (a cell the paper's Table 1 leaves empty, shown as ours); questions not answered
        "note": "; ".join(notes) or None,
    }


def usage_columns(usage: Mapping | None) -> dict:
    """The call-usage columns from a summary's ``usage`` object; {} without one (runs made before it).

    >>> usage_columns({"mpm_tokens_in": 4200.0, "all_call_tokens": 5100.0})["mpm_tokens_out"] is None
    True
    >>> usage_columns(None)
    {}
    """
    if not usage:
        return {}
    return {k: usage.get(k) for k in ("mpm_tokens_in", "mpm_tokens_out", "all_call_tokens")}


def audited_columns(audited: Mapping | None) -> dict:
    """The audited columns from a summary's ``audited`` object; {} without one (tables of runs without
    errata keep their columns).

    >>> audited_columns({"evidence_recall": {"audited": {"mean": 0.5}}, "flagged": 3,
    ...                  "locomo_f1": {"clean": {"mean": 0.25}}, "ceiling": {"overall": 0.9}})["evidence_recall_audited"]
    0.5
    >>> audited_columns(None)
    {}
    """
    if not audited:
        return {}

    def audited_mean(name: str, group: str = "audited") -> float | None:
        return ((audited.get(name) or {}).get(group) or {}).get("mean")

    return {
        "evidence_recall_audited": audited_mean("evidence_recall"),
        "gold_keep_recall_audited": audited_mean("gold_keep_recall"),
        "answer_recall_in_memory_audited": audited_mean("answer_recall_in_memory"),
        "locomo_f1_clean": audited_mean("locomo_f1", "clean"),
        "judge_accuracy_clean": audited_mean("accuracy", "clean"),
        "flagged": audited.get("flagged"),
        "ceiling": (audited.get("ceiling") or {}).get("overall"),
    }


def cell_changes(cell: Path, cfg: Any, dataset: Any) -> list[str] | None:
    """What makes a cell's earlier results stale for `cfg` on `dataset`: None when it has none,
    [] when they belong (same config fingerprint, dataset sha256 and prompts, as ``runfiles.resume``
    decides), else the changes ('dataset sha256: a -> b'; a manifest without them is unknown, never
    a match; results without a readable manifest are of unknown inputs). Records that are not the cell's
    own runs' raise ForeignRecordError (``runfiles.check_records_belong``): they are never counted fresh."""
    from lazymem import prompts
    from lazymem.eval.config import config_fingerprints, resolve_cache, seeded
    from lazymem.eval.runfiles import (
        MANIFEST_FILE,
        RECORDS_FILE,
        RESULT_FILES,
        check_records_belong,
        identity_changes,
        load_manifest,
        load_records,
        manifest_identity,
        run_identity,
    )

    manifest = load_manifest(cell / MANIFEST_FILE)
    if not any((cell / n).exists() for n in RESULT_FILES):
        return None
    if not manifest:
        return [f"no readable {MANIFEST_FILE} beside {RECORDS_FILE}: inputs unknown"]
    check_records_belong(cell / RECORDS_FILE, load_records(cell / RECORDS_FILE)[0], manifest)
    identity = run_identity(config_fingerprints(resolve_cache(seeded(cfg))[0]), dataset.sha256, prompts.prompt_hashes())
    return identity_changes(manifest_identity(manifest), identity)


def summary_only(cell: Path) -> bool:
    """Whether a cell holds a finished result without its records: a summary that recorded every
    selected question, and no records file (they quote the dataset and stay out of git, so a fresh
    clone has only the summary). A run of the whole table shows such a cell as it is (when its inputs
    still match); naming its row in ``only`` reruns all its questions in place.

    >>> import tempfile
    >>> cell = Path(tempfile.mkdtemp())
    >>> _ = (cell / "summary.json").write_text('{"counts": {"selected": 2, "missing": 0}}')
    >>> summary_only(cell)
    True
    >>> _ = (cell / "records.jsonl").write_text("")
    >>> summary_only(cell)
    False
    """
    from lazymem.eval.runfiles import RECORDS_FILE, SUMMARY_FILE, read_json

    summary = read_json(cell / SUMMARY_FILE)
    if not isinstance(summary, dict) or (cell / RECORDS_FILE).exists():
        return False
    counts = summary.get("counts") or {}
    return bool(counts.get("selected")) and counts.get("missing") == 0


def run_eval_table(
    config: EvalTableConfig,
    progress: bool = True,
    clients_for: Any = None,
    command: Sequence[str] | None = None,
    page_only: bool = False,
    config_path: str | None = None,
) -> dict:
    """Run every unfinished cell, then write and return {set: {row: columns}}.

    ``page_only``: run nothing; write the result page (table.md/json) from the cells already finished
    (a stale or missing cell shows its mark, never numbers). ``config_path`` is named on the page.

    The cells go through the sweep engine (``lazymem.sweep.run_cells``). A finished cell is reused
    only when its manifest matches the cell's config, the set's dataset bytes and the prompts
    (``cell_changes``); a selected cell is handed to the resumable runner, which finishes what is
    missing and costs nothing when all is done. A matching cell whose summary is all that is here
    (``summary_only``: a fresh clone holds committed summaries, not the records) is shown as it is
    unless ``only`` names its row, which reruns its questions in place. A stale cell is recomputed (its
    old results set aside into ``<cell>/previous-<time>/``, never deleted) and its row says
    ``recomputed: <changes>``; a stale cell that ``only`` leaves out is not shown as a result: its
    columns are empty and it says ``stale: <changes>``. ``clients_for(set, row)`` may return ready
    clients by role for a cell (tests: scripted fakes).

    With ``config.executor`` local or slurm each cell to run is a job (``config.shards`` jobs, each a
    part of the questions in ``<cell>/shards/<i>-of-<K>/``, merged into the cell), its logs and
    ``jobs.json`` in ``<output_dir>/jobs/``; a cell whose job failed says ``failed`` in the table.
    ``command`` is the sweep's command line (``lazymem jobs`` resubmits with it).
    """
    from lazymem.eval.runfiles import SUMMARY_FILE, read_json
    from lazymem.eval.runner import evaluate
    from lazymem.sweep import Cell, run_cells, write_table

    out = Path(config.output_dir)
    prepared = CellInputs(config)
    found: dict[tuple[str, ...], list[str] | None] = {}  # cell_changes by cell, read once

    def changes_of(cell: Cell) -> list[str] | None:
        if cell.key not in found:
            found[cell.key] = cell_changes(cell.folder, *prepared(cell))
        return found[cell.key]

    def selected(s: str, r: str) -> bool:
        if page_only:
            return False
        if config.only:
            return r in config.only
        folder = out / s / r  # a finished result without its records (a fresh clone): shown, not rerun
        return not (summary_only(folder) and changes_of(Cell((s, r), folder)) == [])

    cells = [Cell((s, r), out / s / r, selected=selected(s, r)) for s in config.sets for r in config.rows]
    audits = config.judge_audits()  # bad files fail first

    def check(cell: Cell) -> list[str] | None:
        if not cell.selected and read_json(cell.folder / SUMMARY_FILE) is None:
            return None  # left out, nothing to show: its config is not even built
        return changes_of(cell)

    def run(cell: Cell, changes: tuple[str, ...]) -> dict:
        cfg, dataset = prepared(cell)
        return evaluate(
            cfg,
            cell.folder,
            progress=progress,
            clients=clients_for(*cell.key) if clients_for else None,
            dataset=dataset,
            force_new=bool(changes),
            command=["lazymem", "eval-table", *cell.key],
        )

    jobs = None
    if not config.executor.inline and not page_only:
        if clients_for is not None:
            raise ConfigError(
                "run_eval_table: clients_for= gives ready clients, which cannot cross into a job; "
                f"executor {config.executor.kind!r} builds each cell's clients in its job"
            )
        jobs = CellJobs(config, prepared, command or ["lazymem", "eval-table"]).plan(out)
    outcomes = run_cells(
        cells,
        check=check,
        run=run,
        load=lambda cell: read_json(cell.folder / SUMMARY_FILE),
        resume=True,
        catch=jobs is not None,
        progress="lines" if progress else None,
        label="eval-table",
        jobs=jobs,
    )
    summaries: dict[str, dict[str, dict]] = {}
    for o in outcomes:
        if o.shown or o.status in ("stale", "failed"):  # a stale or failed cell shows no numbers, only its mark
            summaries.setdefault(o.cell.key[0], {})[o.cell.key[1]] = o.result if o.shown else {}
    marks = {o.cell.key: o.mark() for o in outcomes}
    table = {
        s: {
            r: dict(
                table_row(
                    v, rows.get(config.reference) if config.reference else None, extension=r in config.not_in_paper
                ),
                **marks[(s, r)],
            )
            for r, v in rows.items()
        }
        for s, rows in summaries.items()
    }
    audit_lines = judge_audit_beside(table, audits, lambda s, r: prepared(Cell((s, r), out / s / r))[0])
    text = page_head(config, config_path) + table_markdown(table, config.reference)
    if audit_lines:
        text = text.rstrip("\n") + "\n\n" + "\n".join(audit_lines) + "\n"
    if config.paper_systems_not_run:
        text = (
            text.rstrip("\n")
            + "\n\n"
            + "\n".join(
                line
                for s in table
                for line in [f"### {s}", ""]
                + reported_only_markdown(reported_only(config.paper_systems_not_run, set_dataset(config, s)))
            )
        )
    text = text.rstrip("\n") + "\n\n" + "\n".join(provenance_lines(out, table, command)) + "\n"
    write_table(out, table, text)
    return table


def judge_audit_beside(
    table: Mapping[str, dict[str, dict]], audits: Mapping[str, tuple[str, Mapping]], cell_config: Any
) -> list[str]:
    """Put each set's judge audit beside its judged rows (those with judge_accuracy): the audit's overall
    false-accept and false-reject rates as columns where the cell's judge (``cell_config(set, row)``'s) is
    the audited one, a note naming the differences where it is not; returns the page's lines on the audits.
    """
    from lazymem.eval.judge_audit import beside_columns, beside_line, judge_differences

    lines = []
    for set_name, (path, result) in audits.items():
        beside = []
        for row, columns in (table.get(set_name) or {}).items():
            if columns.get("judge_accuracy") is None:
                continue  # not judged (or no numbers shown)
            if differ := judge_differences(result, cell_config(set_name, row)):
                note = f"judge audit {Path(path).name} is of another judge ({'; '.join(differ)})"
                columns["note"] = "; ".join(n for n in (columns.get("note"), note) if n)
                continue
            columns.update(beside_columns(result))
            beside.append(row)
        lines.append(f"{set_name}: " + beside_line(path, result, beside))
    return lines


def page_head(config: EvalTableConfig, config_path: str | None) -> str:
    """A result page's opening: its title, what a reader needs to interpret it, and its config."""
    lines = [f"# {config.title}", ""] if config.title else []
    if config.description:
        lines += [" ".join(config.description.split()), ""]
    if config_path:
        lines += [f"Config: `{Path(config_path).as_posix()}` (base `{config.base}`).", ""]
    return "\n".join(lines) + "\n" if lines else ""


def provenance_lines(out: Path, table: Mapping[str, Mapping], command: Sequence[str] | None) -> list[str]:
    """Where a table's numbers come from: the command that remakes it, and each cell run's commit and dates
    (from the cells' manifests), grouped by commit."""
    from lazymem import __version__
    from lazymem.eval.runfiles import MANIFEST_FILE, read_json

    made: dict[str, list] = {}
    for set_name, rows in table.items():
        for row, columns in rows.items():
            if columns.get("stale") or columns.get("failed"):
                continue  # shows no numbers: not a source of the page
            m = read_json(out / set_name / row / MANIFEST_FILE) or {}
            if m.get("status") in ("done", "done_with_errors"):
                made.setdefault((m.get("git_commit") or "unknown")[:7], []).append(
                    (str(m.get("end") or m.get("start") or "")[:10], f"{set_name}/{row}")
                )
    from lazymem.secrets import redact_command

    shown = (
        " ".join(map(str, redact_command(command))) if command else "lazymem eval-table --config <this table's config>"
    )
    lines = [
        f"Remade by `{shown}` (lazymem {__version__}): finished cells whose config, dataset and prompts "
        "still match are read back, others are run."
    ]
    for commit, cells in sorted(made.items(), key=lambda kv: min(d for d, _ in kv[1])):
        dates = sorted(d for d, _ in cells)
        span = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
        lines.append(f"- commit {commit}, finished {span}: " + ", ".join(sorted(c for _, c in cells)))
    return lines


def set_dataset(config: EvalTableConfig, set_name: str) -> str:
    """The dataset spec a set's cells read (from its first row's config; nothing is loaded)."""
    from lazymem.eval.config import EvalConfig

    return EvalConfig.from_yaml(config.base, config.cell_overrides(set_name, next(iter(config.rows)))).dataset


class CellInputs:
    """A cell's EvalConfig and dataset, built when first asked for; a dataset is loaded once per
    (spec, subset) and shared by the set's rows."""

    def __init__(self, config: EvalTableConfig):
        self.config = config
        self.configs: dict[tuple[str, ...], Any] = {}
        self.datasets: dict[tuple, Any] = {}

    def __call__(self, cell: Any) -> tuple[Any, Any]:
        from lazymem.data import load_dataset
        from lazymem.eval.config import EvalConfig

        if cell.key not in self.configs:
            self.configs[cell.key] = EvalConfig.from_yaml(self.config.base, self.config.cell_overrides(*cell.key))
        cfg = self.configs[cell.key]
        key = (cfg.dataset, cfg.subset)
        if key not in self.datasets:
            self.datasets[key] = load_dataset(cfg.dataset, subset=cfg.subset)
        return cfg, self.datasets[key]


def run_cell_job(cfg: Any, folder: str, force_new: bool, command: Sequence[str]) -> dict:
    """One eval-table job: the cell's (or shard's) resumable run, its clients built here."""
    from lazymem.eval.runner import evaluate

    return evaluate(cfg, folder, progress=False, force_new=force_new, command=list(command))


class CellJobs:
    """An eval-table's cells as jobs: one per cell, or ``shards`` per cell merged back (lazymem.eval.shards)."""

    def __init__(self, config: EvalTableConfig, prepared: CellInputs, command: Sequence[str]):
        self.config, self.prepared, self.command = config, prepared, tuple(command)

    def plan(self, out: Path):
        from lazymem.sweep import Jobs

        if self.config.shards > 1:
            try:
                from lazymem.eval import shards  # noqa: F401  (merge_runs, EvalConfig.shard)
            except ImportError:
                raise ConfigError(
                    "EvalTableConfig.shards: shards need lazymem.eval.shards (merge_runs), which this install lacks"
                ) from None
        return Jobs(
            self.config.executor,
            out,
            tasks=self.tasks,
            finish=self.finish,
            done=self.done,
            command=self.command,
            only_index=1,
        )

    def shard_dirs(self, cell: Any) -> list[Path]:
        k = self.config.shards
        return [cell.folder / "shards" / f"{i}-of-{k}" for i in range(k)]

    def tasks(self, cell: Any, changes: tuple[str, ...]) -> list:
        from dataclasses import replace

        from lazymem.jobs import Task

        cfg, _ = self.prepared(cell)
        if self.config.shards == 1:
            return [Task(cell.key, cell.folder, run_cell_job, (cfg, str(cell.folder), bool(changes), self.command))]
        k = self.config.shards
        return [
            Task(
                cell.key,
                d,
                run_cell_job,
                (replace(cfg, shard=f"{i}/{k}"), str(d), bool(changes), self.command),
                name=d.name,
            )
            for i, d in enumerate(self.shard_dirs(cell))
        ]

    def finish(self, cell: Any, changes: tuple[str, ...], results: list) -> dict:
        if self.config.shards == 1:
            return results[0]
        from lazymem.eval.runfiles import MANIFEST_FILE, RESULT_FILES
        from lazymem.eval.shards import merge_runs
        from lazymem.sweep import set_aside

        if changes:  # the merged results of other inputs: set aside, never deleted
            set_aside(cell.folder, (*RESULT_FILES, MANIFEST_FILE))
        return merge_runs(self.shard_dirs(cell), cell.folder, dataset=self.prepared(cell)[1], command=self.command)

    @staticmethod
    def done(cell: Any) -> bool:
        """A finished cell (its manifest says done) needs no job; an unfinished one resumes in one."""
        from lazymem.eval.runfiles import MANIFEST_FILE, read_json

        return (read_json(cell.folder / MANIFEST_FILE) or {}).get("status") == "done"


def table_markdown(
    table: Mapping[str, Mapping[str, Mapping]], reference: str | None = None, columns: Sequence[str] = COLUMNS
) -> str:
    """One markdown table per question set, a row per method; empty columns left out."""
    from lazymem.sweep import mark_notes

    lines = []
    for set_name, rows in table.items():
        cols = [c for c in columns if any(r.get(c) is not None for r in rows.values())]
        head = [("ratio to " + reference) if c == "ratio_to_ref" and reference else c for c in cols]
        lines += [f"## {set_name}", "", "| row | " + " | ".join(head) + " |", "|---|" + "---:|" * len(cols)]
        for name, r in rows.items():
            shown = f"{name} ({r['note']})" if r.get("note") else name
            lines.append(f"| {shown} | " + " | ".join(_fmt(c, r.get(c)) for c in cols) + " |")
        lines.append("")
        notes = mark_notes(rows, MARK_TEXTS)
        lines += [*notes, ""] if notes else []
    return "\n".join(lines)


def _fmt(column: str, v: Any) -> str:
    if v is None:
        return "-"
    if column in ("questions", "judge_errors", "flagged"):
        return str(v)
    if column in ("memory_tokens", "processing_s", "mpm_tokens_in", "mpm_tokens_out", "all_call_tokens"):
        return f"{v:.1f}"
    return f"{v:.3f}"
