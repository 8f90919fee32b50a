"""The training table: several models on several held-out sets of query-window pairs, one cell each.

``WindowTableConfig`` names the sets (held-out pair files, ``lazymem train sft-data``) and the rows
(a model: ``mpm`` LLMConfig keys, ``structured``, ``sampling``). ``run_window_table`` runs each cell
with ``lazymem.train.heldout.evaluate_windows`` into ``<output_dir>/<set>/<row>/`` through the sweep
engine (``lazymem.sweep``): a cell whose ``summary.json`` holds the cell's identity (its settings,
``window_identity``) is read back; one made with other settings is recomputed, its old results set
aside into ``previous-<time>/``; ``only`` / ``only_sets`` leave the other cells as they are (a stale
one is flagged, not shown). Then ``table.md`` (``heldout.table_markdown``) and ``table.json``.

>>> cfg = WindowTableConfig(sets={"s": "pairs.jsonl"}, rows={"base": {"mpm": {"model": "smollm2-offline"}}})
>>> ident = window_identity(cfg.row_config("base", "pairs.jsonl"))
>>> ident["data"], ident["limit"], "batch_windows" in ident, "thinking_budget" in ident["mpm"]
('pairs.jsonl', 40, False, False)
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError
from lazymem.fields import h
from lazymem.llm import LLMConfig, Sampling
from lazymem.train.heldout import RECORDS_FILE, SUMMARY_FILE, WindowEvalConfig, evaluate_windows, table_markdown

# Operational LLM settings: how fast or where, never what a window's output is.
OPERATIONAL = ("batch_size", "num_threads", "concurrency", "timeout", "max_retries", "retry_wait", "cache_dir")


def _chosen(value, known: Mapping, field_name: str, what: str) -> tuple[str, ...]:
    """A name or names from ``known`` as a tuple (empty = all); an unknown name is a ConfigError."""
    names = (value,) if isinstance(value, str) else tuple(value or ())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"WindowTableConfig.{field_name}: unknown {what} {unknown} ({what}: {', '.join(known)})")
    return names


@dataclass(frozen=True)
class WindowTableConfig:
    """Rows (models) x sets (held-out pair files): the keys of an ``eval-windows`` YAML recipe."""

    sets: Mapping[str, str] = field(default_factory=dict, metadata=h("name -> JSONL of held-out query-window pairs"))
    rows: Mapping[str, Mapping] = field(
        default_factory=dict, metadata=h("name -> {mpm: LLMConfig keys, structured: bool, sampling: Sampling keys}")
    )
    only: tuple[str, ...] = field(default=(), metadata=h("run only these rows (empty = all)"))
    only_sets: tuple[str, ...] = field(
        default=(), metadata=h("run only on these sets (empty = all); finished cells of every set stay in the table")
    )
    limit: int | None = field(default=40, metadata=h("balanced windows per set (None = all)"))
    seed: int = field(default=0, metadata=h("seed of the subset: every row sees the same windows"))
    output_dir: str = field(default="runs/eval_windows", metadata=h("<set>/<row>/summary.json and table.md"))
    executor: Any = field(
        default=None,
        metadata=h(
            "where cells run: inline (default), local or slurm, or lazymem.jobs.JobsConfig keys (partition, ...)"
        ),
    )

    def __post_init__(self):
        from lazymem.jobs import JobsConfig

        object.__setattr__(self, "executor", JobsConfig.of(self.executor, "WindowTableConfig.executor"))
        for name in ("sets", "rows"):
            v = getattr(self, name)
            if not (isinstance(v, Mapping) and v and all(isinstance(k, str) for k in v)):
                raise ConfigError(f"WindowTableConfig.{name} must be a non-empty mapping of names")
        object.__setattr__(self, "only", _chosen(self.only, self.rows, "only", "rows"))
        object.__setattr__(self, "only_sets", _chosen(self.only_sets, self.sets, "only_sets", "sets"))

    def row_config(self, row: str, data: str) -> WindowEvalConfig:
        spec = dict(self.rows[row])
        where = f"rows.{row}"
        from lazymem.errors import check_fields

        check_fields(WindowEvalConfig, spec, where)
        mpm = spec.pop("mpm", {})
        sampling = spec.pop("sampling", None)
        try:
            check_fields(LLMConfig, mpm, f"{where}.mpm")
            kw = {"mpm": LLMConfig(**mpm)}
            if sampling is not None:
                check_fields(Sampling, sampling, f"{where}.sampling")
                kw["sampling"] = Sampling(**sampling)
            return WindowEvalConfig(data=data, limit=self.limit, seed=self.seed, **kw, **spec)
        except (ConfigError, TypeError) as e:
            raise ConfigError(f"{where}: {e}") from None

    def selected(self, set_name: str, row: str) -> bool:
        """Whether ``only`` and ``only_sets`` let this cell run."""
        return (not self.only or row in self.only) and (not self.only_sets or set_name in self.only_sets)


def window_identity(cfg: WindowEvalConfig) -> dict:
    """What decides a cell's numbers: the evaluation's settings less the operational ones. A field
    added since leaves the identity of cells made before it unchanged while it is unset."""
    d = asdict(cfg)
    d["sampling"] = cfg.sampling.as_dict()  # an unset logit_bias leaves older cells' identity unchanged
    for k in OPERATIONAL:
        d["mpm"].pop(k, None)
    if cfg.mpm.thinking_budget is None:  # as in LLMConfig.identity: no budget, no thinking settings
        d["mpm"].pop("thinking_budget", None)
        d["mpm"].pop("thinking_budget_mode", None)
    d.pop("batch_windows", None)
    from lazymem.llm.models import recorded_adapter

    d["mpm"]["adapter"] = recorded_adapter(d["mpm"].get("adapter"))  # a shipped version under one name
    if not cfg.grounded:  # cells finished before the option existed stay valid
        d.pop("grounded", None)
    if not cfg.keep_prior:  # likewise
        d.pop("keep_prior", None)
    if not cfg.keep_prior_dense:  # likewise
        d.pop("keep_prior_dense", None)
        d.pop("keep_prior_model", None)
    if not cfg.trace_independent:  # likewise
        d.pop("trace_independent", None)
    return d


def identity_key(cfg: WindowEvalConfig) -> str:
    """The identity as a cell's summary.json stores it (one JSON string, keys sorted)."""
    return json.dumps(window_identity(cfg), sort_keys=True, default=str)


def _read_summary(cell: Path) -> dict | None:
    try:
        return json.loads((cell / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def cell_changes(folder: Path, cfg: WindowEvalConfig) -> list[str] | None:
    """What makes a cell's stored summary stale for ``cfg``: None when it has none, [] when its
    identity is the cell's, else the settings that differ ('mpm.adapter: a -> b')."""
    from lazymem.sweep import json_changes

    done = _read_summary(folder)
    if done is None:
        return None
    key = identity_key(cfg)
    if done.get("identity") == key:
        return []
    try:
        old = json.loads(done["identity"]) if isinstance(done.get("identity"), str) else None
    except ValueError:
        old = None
    return json_changes(old, json.loads(key)) or ["identity: written differently"]


def run_cell(spec: WindowEvalConfig, folder: Path, progress: bool = False) -> dict:
    """One cell: its windows evaluated into ``folder``, the summary stamped with the cell's identity."""
    from lazymem.files import write_json

    summary = evaluate_windows(spec, folder, progress=progress)
    summary["identity"] = identity_key(spec)
    write_json(Path(folder) / SUMMARY_FILE, summary)
    return summary


def run_window_table(config: WindowTableConfig, progress: bool = True, command: list[str] | None = None) -> dict:
    """Evaluate every (set, row) not yet done (a finished cell with the same settings is read back),
    then write ``table.md`` and ``table.json``; returns {set: {row: summary}} (a recomputed cell's
    summary says ``recomputed``, a stale cell left out is ``{"stale": <changes>}``). With
    ``config.executor`` local or slurm each cell to run is one job (lazymem.jobs; a failed one is
    ``{"failed": <error>}``), its log and ``jobs.json`` in ``<output_dir>/jobs/``."""
    from lazymem.jobs import Task
    from lazymem.sweep import Cell, Jobs, run_cells, write_table

    out = Path(config.output_dir)
    cells = [
        Cell((s, r), out / s / r, config.row_config(r, data), config.selected(s, r), (RECORDS_FILE, SUMMARY_FILE))
        for s, data in config.sets.items()
        for r in config.rows
    ]
    jobs = (
        None
        if config.executor.inline
        else Jobs(
            config.executor,
            out,
            tasks=lambda cell, changes: [Task(cell.key, cell.folder, run_cell, (cell.spec, cell.folder))],
            command=tuple(command or (Path(sys.argv[0]).name, *sys.argv[1:])),
            only_index=1,
        )
    )
    outcomes = run_cells(
        cells,
        check=lambda cell: cell_changes(cell.folder, cell.spec),
        run=lambda cell, changes: run_cell(cell.spec, cell.folder, progress),
        load=lambda cell: _read_summary(cell.folder),
        progress="lines" if progress else None,
        catch=jobs is not None,
        label="eval-windows",
        jobs=jobs,
    )
    table: dict[str, dict[str, dict]] = {}
    for o in outcomes:
        if o.shown or o.status in ("stale", "failed"):
            table.setdefault(o.cell.key[0], {})[o.cell.key[1]] = {**(o.result or {}), **o.mark()}
    write_table(out, table, table_markdown(table))
    return table
