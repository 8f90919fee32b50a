"""``lazymem train sft-data|rl-data|sft|grpo --config ... --smoke``: a training recipe end to end on CPU, offline.

Every stage runs with the recipe's own settings, replacing only what this machine cannot have, and
says what it replaced (a table: setting, paper value, smoke value):

- models: where a stage needs weights, ``smoke_models.TINY`` (the paper's family, random); where it
  needs behaviour, a scripted thinking model on a loopback port (the SFT teacher, DeepSeek-like, its
  trace in ``reasoning_content``; the reward judge, Qwen3-like, thinking inline over the paper's
  reply limit); retrieval models: the offline MiniLM and no reranker;
- data: the embedded synthetic data set instead of LongMemEval-S (not on this machine), a few
  questions, a few prompts; a data file a recipe reads is made by the data config beside it that
  writes it (e.g. ``data_sft.yaml`` for ``sft.yaml`` in ``configs/recipes/lazymem-4b-paper/``), smoked first;
- size: a few optimizer steps, smaller batches, fewer validation prompts; vLLM rollouts become TRL's
  in-process generation, constrained to the decision-array form (``smoke_models.DecisionRollouts``).

It FAILS (``SmokeFailure``, exit 1) on what a real run would trip on: weights that did not move (every
trainable tensor compared before and after), a reward constant over the rollouts, judge replies
without a verdict, prompts over the max input length, reasoning lost from targets or judge prompts, a
checkpoint that does not reload and generate. Outputs go to ``runs/smoke/<stage>-<recipe>-<config>``
(replaced on every run).
"""

from __future__ import annotations

import copy
import json
import math
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError

SPEC = "synthetic:messages=400,seed=0,histories=4,questions=12"  # the embedded generator, offline
QUESTIONS, RL_PROMPTS, VALIDATION_PROMPTS = 4, 16, 2
PAPER_DATA = "LongMemEval-S (not on this machine: no hub)"
KINDS = ("sft-data", "rl-data", "sft", "grpo")


def config_name(where: str | Path) -> str:
    """A stage config's name with its recipe's: ``configs/recipes/lazymem-4b-paper/sft.yaml`` ->
    ``lazymem-4b-paper-sft``."""
    path = Path(where)
    return f"{path.parent.name}-{path.stem}" if path.parent.name else path.stem


PAPER_MAX_INPUT = 8192  # the paper's max input length (both stages)


class SmokeFailure(RuntimeError):
    """A smoke check failed: something a real run of the recipe would trip on."""


@dataclass
class Section:
    """One stage of a smoke run: what it replaced and what it checked."""

    stage: str
    config: str
    rows: list[tuple[str, str, str]] = field(default_factory=list)  # (setting, paper value, smoke value)
    checks: list[tuple[str, bool, str]] = field(default_factory=list)  # (check, passed, detail)
    kept: list[str] = field(default_factory=list)  # settings run as the recipe has them
    defaults: dict = field(default_factory=dict)  # the config class's defaults (a key the file leaves out)

    def set(self, data: dict, key: str, value: Any, shown: str | None = None) -> None:
        """Replace ``data[key]`` (dotted for nested) and record it, unless it already has that value."""
        *parents, last = key.split(".")
        d = data
        for k in parents:
            d = d.setdefault(k, {})
        current = d[last] if last in d else self.defaults.get(key)
        if current == value:
            return
        self.rows.append((key, _show(current), shown or _show(value)))
        d[last] = value

    def keep(self, config: Any) -> None:
        """Record every setting of the built ``config`` (a dataclass) that the smoke did not replace."""
        import dataclasses

        replaced = {k for k, _, _ in self.rows}

        def walk(prefix: str, v: Any) -> None:
            if isinstance(v, dict) and v:
                for k, sub in v.items():
                    walk(f"{prefix}.{k}" if prefix else k, sub)
            elif prefix not in replaced and prefix.split(".")[0] not in ("progress", "output_dir"):
                self.kept.append(f"{prefix}={_show(list(v) if isinstance(v, tuple) else v)}")

        walk("", config.to_dict() if hasattr(config, "to_dict") else dataclasses.asdict(config))

    def use_defaults(self, cls: type) -> None:
        import dataclasses

        self.defaults = {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}

    def check(self, name: str, ok: bool, detail: str) -> None:
        self.checks.append((name, bool(ok), detail))


def _show(v: Any) -> str:
    return "null" if v is None else json.dumps(v) if isinstance(v, (list, dict)) else str(v)


class Smoke:
    """A smoke run: its folder, the stages run so far (data stages first), and the data they made."""

    def __init__(self, root: Path):
        self.root, self.sections, self.made = root, [], {}

    def section(self, stage: str, config: str) -> Section:
        self.sections.append(Section(stage, config))
        return self.sections[-1]

    @property
    def failures(self) -> list[str]:
        return [f"{s.stage}: {name}: {detail}" for s in self.sections for name, ok, detail in s.checks if not ok]

    def text(self) -> str:
        """The tables and checks, as printed."""
        out = []
        for s in self.sections:
            source = "paper" if "paper" in config_name(s.config) else "recipe"
            out += [
                f"== lazymem train {s.stage} --smoke ({s.config}) ==",
                f"| setting | {source} | smoke |",
                "|---|---|---|",
            ]
            out += [f"| {k} | {a} | {b} |" for k, a, b in s.rows]
            if s.kept:
                out.append("kept as the recipe has them: " + ", ".join(s.kept))
            out += [f"  {'ok  ' if ok else 'FAIL'} {name}: {detail}" for name, ok, detail in s.checks] + [""]
        return "\n".join(out)

    def record(self) -> dict:
        return {
            "root": str(self.root),
            "failures": self.failures,
            "sections": [
                {
                    "stage": s.stage,
                    "config": s.config,
                    "replaced": s.rows,
                    "kept": s.kept,
                    "checks": [{"check": n, "ok": ok, "detail": d} for n, ok, d in s.checks],
                }
                for s in self.sections
            ],
        }


# --- data stages ------------------------------------------------------------------------------------------------


def _common_data(sec: Section, data: dict, out: Path) -> None:
    """The replacements every data stage shares: data set, question count, retrieval models, output."""
    sec.set(data, "datasets", [SPEC], f"{SPEC} (embedded synthetic; {PAPER_DATA})")
    sec.set(data, "questions", QUESTIONS)
    sec.set(data, "per_type", None)
    retrieval = data.setdefault("retrieval", {})
    sec.set(data, "retrieval.dense_model", "minilm-offline", "minilm-offline (all-MiniLM-L6-v2, ships offline)")
    for key in ("dense_base_url", "reranker"):
        if retrieval.get(key) is not None:
            sec.set(data, f"retrieval.{key}", None, "null (no reranker ships offline)" if key == "reranker" else None)
    if retrieval.get("device") not in (None, "cpu"):
        sec.set(data, "retrieval.device", "cpu")
    sec.set(data, "output_dir", str(out))
    data["progress"] = False


def producer(path: str, recipe_file: str) -> tuple[Path, dict] | None:
    """The data config beside ``recipe_file`` whose ``output_dir`` holds ``path`` (a data file or folder)."""
    from lazymem.yamlio import read_mapping

    target = Path(path)
    folder = target.parent if target.suffix else target
    for cfg in sorted(Path(recipe_file).parent.glob("*.yaml")):
        try:
            d = read_mapping(cfg)
        except ConfigError:
            continue
        if isinstance(d, dict) and "datasets" in d and Path(str(d.get("output_dir", ""))) == folder:
            return cfg, d
    return None


def made_by(smoke: Smoke, path: str, recipe_file: str, kind: str) -> tuple[str, str]:
    """(the smoke's stand-in for ``path``, how it was made): the producing data config's smoke output, or
    the embedded data under the paper's shape when no config beside the recipe writes it."""
    found = producer(path, recipe_file)
    cfg, data = found if found else (None, {"split": "train", "window": {"w": 2, "L": 8, "s": 7}})
    name = str(cfg) if cfg else f"smoke_{kind}_default"
    if name not in smoke.made:
        if kind == "sft-data":
            data = {**data} if cfg else {**data, "teacher": "gold-trace"}
            smoke.made[name] = smoke_sft_data(smoke, data, name)
        else:
            data = {**data} if cfg else {**data, "size": RL_PROMPTS}
            smoke.made[name] = smoke_rl_data(smoke, data, name)
    out = Path(smoke.made[name])
    file = out / ("sft.jsonl" if kind == "sft-data" else "rl_prompts.jsonl")
    return (str(file) if Path(path).suffix else str(out)), f"made by the smoke of {name}"


def smoke_sft_data(smoke: Smoke, data: dict, where: str) -> str:
    """SFT data with the recipe's settings on the smoke's data and teacher; returns its folder."""
    from lazymem.llm.scripted import ScriptedQwen3, ScriptedServer
    from lazymem.train.datacard import read_jsonl
    from lazymem.train.sft_data import SFTDataConfig, build_sft_data
    from lazymem.train.smoke_models import teacher_decisions

    data = copy.deepcopy(dict(data))
    sec = smoke.section("sft-data", where)
    sec.use_defaults(SFTDataConfig)
    out = smoke.root / f"{config_name(where)}-data"
    _common_data(sec, data, out)
    teacher = data.get("teacher")
    model = ScriptedQwen3(teacher_decisions, think_tokens=None, reasoning_field="reasoning_content")
    with ScriptedServer(model) as url:
        if isinstance(teacher, Mapping):
            sec.set(data, "teacher.backend", "openai")
            sec.set(
                data,
                "teacher.base_url",
                url,
                f"{url} (a scripted DeepSeek-like thinker: trace in "
                "reasoning_content, KEEP for messages sharing a query word)",
            )
            sec.set(data, "teacher.cache_dir", None, "null (every call reaches the scripted teacher)")
        config = SFTDataConfig.from_dict(data)
        sec.keep(config)
        card = build_sft_data(config)
    rows = read_jsonl(out / "sft.jsonl")
    sec.check(
        "instances",
        card["instances"] > 0,
        f"{card['instances']} from {card['query_window_pairs']} query-window pairs of {card['questions']} questions",
    )
    failed = card["discards_by_reason"].get("failed_call", 0)
    sec.check(
        "teacher calls",
        failed == 0,
        f"{failed} failed of {card['query_window_pairs']}"
        + (f" ({len(model.requests)} reached the scripted teacher)" if model.requests else ""),
    )
    if isinstance(teacher, Mapping) and config.teacher_reasoning:
        with_trace = sum("<think>" in r["completion"][0]["content"] for r in rows)
        sec.check(
            "reasoning kept",
            with_trace == len(rows) and card["targets_with_think"] == len(rows),
            f"{with_trace} of {len(rows)} targets carry the teacher's reasoning_content as <think>...</think>",
        )
    over = card.get("over_max_length", {}).get("total", 0)
    sec.check("within max input", over == 0, f"{over} instances over max_length {config.max_length} tokens")
    return str(out)


def smoke_rl_data(smoke: Smoke, data: dict, where: str) -> str:
    """RL prompts with the recipe's settings on the smoke's data; returns their folder."""
    from lazymem.train.datacard import read_jsonl
    from lazymem.train.rl_data import RLDataConfig, build_rl_prompts, chat_tokenizer, prompt_tokens

    data = copy.deepcopy(dict(data))
    chains = data.get("reasoning_chains")
    made = made_by(smoke, chains, where, "sft-data") if chains else None
    sec = smoke.section("rl-data", where)
    sec.use_defaults(RLDataConfig)
    out = smoke.root / f"{config_name(where)}-data"
    _common_data(sec, data, out)
    want = RL_PROMPTS if data.get("split") != "validation" else RL_PROMPTS // 2
    size = data["size"] if "size" in data else sec.defaults.get("size")
    if size is None or int(size) > want:
        sec.set(data, "size", want)
    if data.get("tokenizer") is not None:
        sec.set(data, "tokenizer", None, "null (the Qwen3 tokenizer and chat template that ship here)")
    if made:
        sec.set(data, "reasoning_chains", made[0], f"{made[0]} ({made[1]})")
    config = RLDataConfig.from_dict(data)
    sec.keep(config)
    card = build_rl_prompts(config)
    rows = read_jsonl(out / "rl_prompts.jsonl")
    sec.check(
        "prompts",
        len(rows) > 0 and (config.size is None or len(rows) == config.size),
        f"{len(rows)} drawn from a pool of {card['pool']} ({card['gold_bearing']} gold-bearing)",
    )
    if config.max_prompt_tokens is not None:
        n = prompt_tokens([r["prompt"] for r in rows], chat_tokenizer(config.tokenizer))
        o = card.get("overlong_prompts") or {}
        sec.check(
            "within max input",
            max(n) <= config.max_prompt_tokens and "dropped" in o,
            f"longest prompt {max(n)} of {config.max_prompt_tokens} tokens with the chat template; "
            f"{o.get('dropped')} dropped from the pool as over it (counted in the card)",
        )
    if config.reasoning_chains:
        c = card["reasoning_chains"]
        sec.check(
            "reasoning chains",
            c["rows_with_chain"] > 0,
            f"{c['rows_with_chain']} of {len(rows)} rows carry the teacher's trace as the judge's chain",
        )
    return str(out)


# --- training stages --------------------------------------------------------------------------------------------


def _training_rows(sec: Section, data: dict, base: str, out: Path) -> None:
    from lazymem.train.smoke_models import TINY

    sec.set(data, "base", base, f"{base} ({TINY})")
    sec.set(data, "output_dir", str(out), f"{out} (emptied first: a fresh run)")


def smoke_sft(smoke: Smoke, data: dict, where: str) -> None:
    """SFT with the recipe's settings: tiny model, the smoke's SFT data, two optimizer steps."""
    from lazymem.train.modeling import LoraSettings
    from lazymem.train.recipe import build_recipe
    from lazymem.train.sft import SFTRecipe, run_sft
    from lazymem.train.smoke_models import (
        TrainedTokens,
        compact_log_probs,
        reloads,
        saved_weights,
        tiny_policy,
        weights_moved,
    )

    data = copy.deepcopy(dict(data))
    paths = [data["data"]] if isinstance(data.get("data"), str) else list(data.get("data") or ["sft.jsonl"])
    made = [made_by(smoke, p, where, "sft-data") for p in paths]
    sec = smoke.section("sft", where)
    sec.use_defaults(SFTRecipe)
    tiny = str(tiny_policy(smoke.root / "tiny_qwen3"))
    _training_rows(sec, data, tiny, smoke.root / "sft")
    sec.set(
        data, "data", [m[0] for m in made] if len(made) > 1 else made[0][0], "; ".join(f"{a} ({b})" for a, b in made)
    )
    sec.set(data, "max_steps", 2, "2 (under warmup step 1's learning rate is 0: step 2 must move the weights)")
    sec.set(data, "save_steps", 2)
    recipe = build_recipe(SFTRecipe, data, where, {"lora": LoraSettings})
    sec.keep(recipe)
    before = saved_weights(tiny)
    probe = TrainedTokens()
    with compact_log_probs() as compact:
        result = run_sft(recipe, callbacks=[probe])
    _compact_row(sec, compact)
    losses = [h["loss"] for h in result["log_history"] if "loss" in h]
    sec.check("loss", losses and all(math.isfinite(x) for x in losses), f"logged losses {losses}")
    sec.check("weights moved", *weights_moved(before, saved_weights(result["final"])))
    targets = [json.loads(line)["completion"][0]["content"] for p in made for line in open(p[0], encoding="utf-8")]
    if any("<think>" in t for t in targets):
        sec.check(
            "reasoning trained",
            "<think>" in probe.trained,
            "the first example's trained (completion) tokens hold the teacher's <think> trace"
            if "<think>" in probe.trained
            else f"trained tokens lack <think>: {probe.trained[:120]!r}",
        )
    sec.check("checkpoint reloads", *reloads(result["final"], tiny))


def _compact_row(sec: Section, compact: bool) -> None:
    if compact:
        sec.rows.append(
            (
                "(TRL log-prob head on CPU)",
                "GPU: scores the loss positions only",
                "the same on CPU (TRL scores every prompt position there: the same log-probs, ~8x the time)",
            )
        )


def smoke_grpo(smoke: Smoke, data: dict, where: str) -> None:
    """GRPO with the recipe's settings: tiny policy, the smoke's prompts, a scripted judge, one rollout batch."""
    from lazymem.llm import LLMConfig
    from lazymem.llm.scripted import ScriptedQwen3, ScriptedServer
    from lazymem.train.grpo import GRPORecipe, run_grpo
    from lazymem.train.modeling import LoraSettings
    from lazymem.train.recipe import build_recipe
    from lazymem.train.rl_data import chat_tokenizer, prompt_tokens
    from lazymem.train.smoke_models import (
        ConstrainedRollouts,
        compact_log_probs,
        fresh_adapter,
        judge_verdict,
        reloads,
        saved_weights,
        tiny_policy,
        weights_moved,
    )

    data = copy.deepcopy(dict(data))
    made = made_by(smoke, data.get("data") or "rl_prompts.jsonl", where, "rl-data")
    val = made_by(smoke, data["validation_data"], where, "rl-data") if data.get("validation_data") else None
    sec = smoke.section("grpo", where)
    sec.use_defaults(GRPORecipe)
    tiny = str(tiny_policy(smoke.root / "tiny_qwen3"))
    _training_rows(sec, data, tiny, smoke.root / "grpo")
    if data.get("adapter"):
        adapter = fresh_adapter(tiny, smoke.root / "sft_adapter")
        sec.set(data, "adapter", adapter, f"{adapter} (a new LoRA on the tiny policy: the SFT adapter's stand-in)")
    sec.set(data, "data", made[0], f"{made[0]} ({made[1]})")
    if val:
        sec.set(data, "validation_data", val[0], f"{val[0]} ({val[1]})")
    sec.set(
        data,
        "use_vllm",
        False,
        "false: TRL's in-process generation (vLLM needs a GPU), constrained to the "
        "decision-array form: the random policy picks every op, the rest is forced",
    )
    # a rollout batch of one prompt x num_generations on one process, two optimizer updates of two micro-steps:
    # the paper's shape (steps_per_generation = 2 x accumulation), 32 times smaller
    g = int(data.get("num_generations", 8))
    sec.set(
        data,
        "per_device_train_batch_size",
        g // 4,
        f"{g // 4} (x 4 micro-steps = 1 prompt x {g} rollouts per rollout batch; the paper: 32 prompts on 2 GPUs)",
    )
    sec.set(data, "gradient_accumulation_steps", 2, "2 (two optimizer updates per rollout batch, as the paper's)")
    sec.set(data, "steps_per_generation", 4)
    sec.set(data, "max_steps", 2, "2 (one rollout batch)")
    sec.set(
        data,
        "eval_every_rollout_batches",
        2,
        "2 (validates before training only: the next would come after the smoke's last step)",
    )
    sec.set(data, "save_every_rollout_batches", 1)
    for key in ("eval_steps", "save_steps"):
        if data.get(key) is not None:
            sec.set(data, key, None)
    sec.set(data, "max_validation_prompts", VALIDATION_PROMPTS)
    judge = ScriptedQwen3(judge_verdict, think_tokens=1500, reasoning_field=None)
    with ScriptedServer(judge) as url:
        if isinstance(data.get("judge"), Mapping):
            sec.set(
                data,
                "judge.base_url",
                url,
                f"{url} (a scripted Qwen3-like thinker: 1,500 think tokens inline, then a verdict from word overlap)",
            )
        recipe = build_recipe(GRPORecipe, data, where, {"lora": LoraSettings, "judge": LLMConfig})
        sec.keep(recipe)
        before = saved_weights(tiny)
        with compact_log_probs() as compact:
            result = run_grpo(recipe, callbacks=[ConstrainedRollouts()])
        _compact_row(sec, compact)
    sec.check("weights moved", *weights_moved(before, saved_weights(result["final"])))
    rows = [
        json.loads(line)
        for f in {recipe.data, recipe.validation_data or recipe.data}
        for line in open(f, encoding="utf-8")
    ]
    longest = max(prompt_tokens([r["prompt"] for r in rows], chat_tokenizer(tiny)))
    sec.check(
        "within max input",
        longest <= PAPER_MAX_INPUT,
        f"longest training or validation prompt {longest} "
        f"tokens with the policy's chat template (the paper's max input: {PAPER_MAX_INPUT}; TRL truncates none)",
    )
    logs = [h for h in result["log_history"] if "reward" in h and "reward_std" in h]
    means, stds = [h["reward"] for h in logs], [h["reward_std"] for h in logs]
    sec.check(
        "reward varies",
        logs and (max(stds) > 0 or len(set(means)) > 1),
        f"reward mean {means}, std {stds} over {len(logs)} logged steps",
    )
    failures, asked = result.get("judge_failures") or {}, [b for b, _ in judge.calls]
    if recipe.judge is not None:
        cur = result["curriculum"]
        sec.check(
            "judge verdicts",
            asked and not failures,
            f"{len(asked)} judge requests, failures {failures or 'none'}; curriculum lambda {cur['lam']} "
            f"(switched at step {cur['switched_at']})",
        )
        cut = sum(f == "length" for _, f in judge.calls)
        chains = sum(
            bool(json.loads(b["messages"][1]["content"])["referenced_reasoning_chain"])
            for b in asked
            if len(b["messages"]) == 2
        )
        sec.check(
            "reasoning in judge prompts",
            chains > 0 or not _has_chains(made[0]),
            f"{chains} judge prompts carry a referenced reasoning chain; {cut} think phases cut at the budget",
        )
    sec.check("checkpoint reloads", *reloads(result["final"], tiny))


def _has_chains(path: str) -> bool:
    return any(json.loads(line).get("reasoning_chain") for line in open(path, encoding="utf-8"))


# --- entry point ------------------------------------------------------------------------------------------------


def run_smoke(kind: str, data: Mapping, where: str, root: str | Path | None = None) -> Smoke:
    """Smoke-run stage ``kind`` of the recipe ``data`` (read from ``where``) into ``root`` (default
    ``runs/smoke/<kind>-<recipe>-<config>``, emptied first); raises SmokeFailure when a check failed."""
    if kind not in KINDS:
        raise ConfigError(f"--smoke runs {', '.join(KINDS)}; not {kind!r}")
    root = Path(root or Path("runs") / "smoke" / f"{kind}-{config_name(where)}")
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    smoke = Smoke(root)
    run = {"sft-data": smoke_sft_data, "rl-data": smoke_rl_data, "sft": smoke_sft, "grpo": smoke_grpo}[kind]
    run(smoke, dict(data), where)
    (root / "smoke.json").write_text(json.dumps(smoke.record(), indent=1) + "\n", encoding="utf-8")
    if smoke.failures:
        raise SmokeFailure(smoke.text() + "\nsmoke FAILED: " + "; ".join(smoke.failures))
    return smoke


def smoke_main(kind: str, data: Mapping, where: str, as_json: bool = False) -> int:
    """The CLI's ``--smoke``: run, print the tables and checks (or JSON); 0 when every check passed, else 1."""
    t0 = time.perf_counter()
    try:
        smoke = run_smoke(kind, data, where)
    except SmokeFailure as e:
        print(e)
        print(f"[smoke of {where} FAILED in {time.perf_counter() - t0:.1f} s]")
        return 1
    print(json.dumps(smoke.record(), indent=1) if as_json else smoke.text())
    print(f"smoke passed: {kind} of {where} in {time.perf_counter() - t0:.1f} s (outputs in {smoke.root})")
    return 0
