"""Several methods on the same questions: one evaluation per (set, row), then one table.

``EvalTableConfig`` names a base recipe (an eval YAML), the question sets (overrides such as
``dataset``, ``subset``, ``limit``) and the rows (overrides such as ``pipeline.method=rag`` or
``pipeline.mpm.adapter=lazymem-135m``). ``run_eval_table`` runs each cell with the ordinary
runner (``evaluate``: resumable, its records and manifest in ``<output_dir>/<set>/<row>``; a
finished cell costs nothing), then writes ``table.md`` / ``table.json`` with, per row:

- ``all_gold_shown`` (All@k of the windows: the share of questions whose every gold message the
  memory step saw), ``gate_fmt`` (the paper's Gate Fmt.), ``gold_keep_recall`` and ``nongold_drop_rate`` of the
  messages the windows showed (lazymem / extractive rows);
- ``memory_tokens`` (mean answer-context tokens, Qwen3) and ``ratio_to_ref`` (to the row named
  ``reference``, e.g. RAG Top50: the paper's compression ratio);
- ``locomo_f1`` (LoCoMo's official token F1) or, without categories, ``answer_f1`` (a proxy);
- ``processing_s`` (mean seconds of memory processing per question, cached calls excluded by
  running fresh) and ``questions``.

>>> row = {"construction": {"gate_fmt": 1.0, "gold_keep_recall": 0.5, "n_messages": 10, "n_gold": 2,
...        "n_kept": 3, "n_gold_kept": 1}, "memory_tokens": {"mean": 50.0}, "counts": {"ok": 4}}
>>> c = table_row(row, {"memory_tokens": {"mean": 200.0}})
>>> c["nongold_drop_rate"], c["ratio_to_ref"]
(0.75, 0.25)
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from lazymem.errors import ConfigError

COLUMNS = ("questions", "all_gold_shown", "gate_fmt", "gold_keep_recall", "nongold_drop_rate", "memory_tokens", "ratio_to_ref",
           "locomo_f1", "answer_f1", "processing_s")


def _h(text: str) -> dict:
    return {"help": text}


def _overrides(value: Any, where: str) -> tuple[str, ...]:
    """A cell's overrides as KEY=VALUE strings: a mapping ({dotted.key: value}) or a list of strings."""
    if isinstance(value, Mapping):
        return tuple(f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in value.items())
    if isinstance(value, (list, tuple)) and all(isinstance(x, str) and "=" in x for x in value):
        return tuple(value)
    raise ConfigError(f"{where}: overrides must be a mapping of dotted keys or a list of KEY=VALUE strings")


@dataclass(frozen=True)
class EvalTableConfig:
    """Rows x sets over one base recipe; the keys of configs/*_eval_table.yaml."""

    base: str = field(default="", metadata=_h("the base eval recipe (YAML) every cell starts from"))
    sets: Mapping[str, Any] = field(default_factory=dict, metadata=_h("name -> overrides choosing the questions"))
    rows: Mapping[str, Any] = field(default_factory=dict, metadata=_h("name -> overrides choosing the method"))
    reference: str | None = field(default=None, metadata=_h("the row memory tokens are compared with (RAG Top50)"))
    only: tuple[str, ...] = field(default=(), metadata=_h("run only these rows (finished cells are always shown)"))
    output_dir: str = field(default="runs/eval_table", metadata=_h("<set>/<row>/ run folders, table.md/json"))

    def __post_init__(self):
        if not self.base:
            raise ConfigError("EvalTableConfig.base: the base eval recipe (a configs/eval_*.yaml path) is required")
        for name in ("sets", "rows"):
            v = getattr(self, name)
            if not (isinstance(v, Mapping) and v):
                raise ConfigError(f"EvalTableConfig.{name} must be a non-empty mapping of names to overrides")
            for k, o in v.items():
                _overrides(o or {}, f"EvalTableConfig.{name}.{k}")
        if self.reference is not None and self.reference not in self.rows:
            raise ConfigError(f"EvalTableConfig.reference={self.reference!r} is not a row ({', '.join(self.rows)})")
        only = (self.only,) if isinstance(self.only, str) else tuple(self.only or ())
        if unknown := [r for r in only if r not in self.rows]:
            raise ConfigError(f"EvalTableConfig.only: unknown rows {unknown} (rows: {', '.join(self.rows)})")
        object.__setattr__(self, "only", only)

    def cell_overrides(self, set_name: str, row: str) -> list[str]:
        return [*_overrides(self.sets[set_name] or {}, f"sets.{set_name}"),
                *_overrides(self.rows[row] or {}, f"rows.{row}")]


def table_row(summary: Mapping, reference: Mapping | None = None) -> dict:
    """The table's columns from one run summary (and the reference row's summary)."""
    c = summary.get("construction") or {}
    rest = (c.get("n_messages") or 0) - (c.get("n_gold") or 0)
    tokens = (summary.get("memory_tokens") or {}).get("mean")
    ref = ((reference or {}).get("memory_tokens") or {}).get("mean")
    proc = ((summary.get("latency_s") or {}).get("processing") or {}).get("mean")
    return {
        "questions": (summary.get("counts") or {}).get("ok"),
        "all_gold_shown": c.get("all_gold_shown"),
        "gate_fmt": c.get("gate_fmt"), "gold_keep_recall": c.get("gold_keep_recall"),
        "nongold_drop_rate": (1 - (c["n_kept"] - c["n_gold_kept"]) / rest) if c and rest else None,
        "memory_tokens": tokens, "ratio_to_ref": tokens / ref if tokens is not None and ref else None,
        "locomo_f1": (summary.get("locomo_f1") or {}).get("overall"),
        "answer_f1": (summary.get("proxy") or {}).get("answer_f1"),
        "processing_s": proc,
    }


def run_eval_table(config: EvalTableConfig, progress: bool = True, clients_for: Any = None) -> dict:
    """Run every unfinished cell, then write and return {set: {row: columns}}.

    ``clients_for(set, row)`` may return ready clients by role for a cell (tests: scripted fakes).
    """
    from lazymem.eval.config import EvalConfig
    from lazymem.eval.runfiles import read_json
    from lazymem.eval.runner import evaluate

    out = Path(config.output_dir)
    summaries: dict[str, dict[str, dict]] = {}
    for set_name in config.sets:
        for row in config.rows:
            cell = out / set_name / row
            done = read_json(cell / "summary.json")
            if config.only and row not in config.only:
                if done is not None:
                    summaries.setdefault(set_name, {})[row] = done
                continue
            cfg = EvalConfig.from_yaml(config.base, config.cell_overrides(set_name, row))
            if progress:
                print(f"[eval-table] {set_name} / {row}", flush=True)
            clients = clients_for(set_name, row) if clients_for else None
            summaries.setdefault(set_name, {})[row] = evaluate(cfg, cell, progress=progress, clients=clients,
                                                               command=["lazymem", "eval-table", set_name, row])
    table = {s: {r: table_row(v, rows.get(config.reference) if config.reference else None)
                 for r, v in rows.items()} for s, rows in summaries.items()}
    from lazymem.files import write_atomic

    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "table.json", json.dumps(table, indent=1) + "\n")
    write_atomic(out / "table.md", table_markdown(table, config.reference))
    return table


def table_markdown(table: Mapping[str, Mapping[str, Mapping]], reference: str | None = None,
                   columns: Sequence[str] = COLUMNS) -> str:
    """One markdown table per question set, a row per method; empty columns left out."""
    lines = []
    for set_name, rows in table.items():
        cols = [c for c in columns if any(r.get(c) is not None for r in rows.values())]
        head = [("ratio to " + reference) if c == "ratio_to_ref" and reference else c for c in cols]
        lines += [f"## {set_name}", "", "| row | " + " | ".join(head) + " |", "|---|" + "---:|" * len(cols)]
        for name, r in rows.items():
            lines.append(f"| {name} | " + " | ".join(_fmt(c, r.get(c)) for c in cols) + " |")
        lines.append("")
    return "\n".join(lines)


def _fmt(column: str, v: Any) -> str:
    if v is None:
        return "-"
    if column == "questions":
        return str(v)
    if column in ("memory_tokens", "processing_s"):
        return f"{v:.1f}"
    return f"{v:.3f}"
