"""Supervised fine-tuning of the memory-processing model with TRL's SFTTrainer (paper Sec. 3.3).

The data is ``lazymem.train.sft_data``'s conversational prompt/completion JSONL (the window
prompt exactly as inference builds it, the teacher's target); the loss is on the completion
only. Full fine-tuning (the paper) or a LoRA adapter (``lora:``, the CPU recipe). A run
resumes from the last complete checkpoint in ``output_dir`` (``resume: true``), so an
interrupted CPU run loses at most ``save_steps`` steps, and a finished run of the same recipe
is not trained again (its recorded result is returned). ``configs/recipes/lazymem-4b-paper/sft.yaml`` is the paper's
table; ``configs/recipes/quickstart-cpu/sft.yaml`` the laptop recipe.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lazymem.errors import ConfigError
from lazymem.fields import h
from lazymem.train.modeling import (
    DTYPES,
    LoraSettings,
    check_master_weights,
    check_trainable_dtypes,
    has_cuda,
    load_policy,
    load_tokenizer,
)
from lazymem.train.recipe import load_recipe, recipe_dict

RESULT_FILE = "train_result.json"


@dataclass(frozen=True)
class SFTRecipe:
    """One SFT run; the same keys as ``configs/recipes/*/sft*.yaml``."""

    base: str = field(default="smollm2-offline", metadata=h("base model: alias, local dir or hub id (paper: Qwen3-4B)"))
    data: str | tuple[str, ...] = field(
        default="",
        metadata=h(
            "SFT JSONL (prompt/completion) from `lazymem train sft-data`, or a list of them (concatenated in order; "
            "the trainer shuffles): e.g. a data set plus an in-domain ablation's extra pairs"
        ),
    )
    output_dir: str = field(
        default="runs/train/sft", metadata=h("checkpoints, the final model/adapter, train_result.json")
    )
    lora: LoraSettings | None = field(default_factory=LoraSettings, metadata=h("LoRA adapter; null = full fine-tuning"))
    adapter: str | None = field(
        default=None,
        metadata=h(
            "continue training this PEFT adapter (a second SFT stage; `lora` is then ignored); None = a new adapter"
        ),
    )
    learning_rate: float = field(default=5e-6, metadata=h("paper: 5e-6"))
    lr_scheduler_type: str = field(default="cosine", metadata=h("paper: cosine"))
    warmup_ratio: float = field(default=0.03, metadata=h("paper: 0.03"))
    num_train_epochs: float = field(default=2.0, metadata=h("paper: 2"))
    per_device_train_batch_size: int = field(default=1, metadata=h("paper: 1 (x 8 accumulation x 2 GPUs = 16)"))
    gradient_accumulation_steps: int = field(default=8, metadata=h("paper: 8"))
    max_length: int = field(default=8192, metadata=h("max tokens of prompt + completion (paper: 8192 input)"))
    bf16: bool = field(default=False, metadata=h("bf16 compute by autocast (paper: true); the weights stay `dtype`"))
    gradient_checkpointing: bool = field(
        default=False,
        metadata=h(
            "recompute activations in the backward pass: less memory, ~1.5x the time (TRL's SFT default is true)"
        ),
    )
    dtype: str = field(
        default="float32",
        metadata=h(f"weights dtype, one of {DTYPES}; full fine-tuning (lora: null) needs float32 (master weights)"),
    )
    max_steps: int = field(default=-1, metadata=h("stop after this many optimizer steps (-1 = the epochs)"))
    logging_steps: int = field(default=1, metadata=h("log every N steps"))
    save_steps: int = field(default=50, metadata=h("checkpoint every N steps (resume point)"))
    save_total_limit: int = field(default=3, metadata=h("checkpoints kept"))
    seed: int = field(default=42, metadata=h("training seed"))
    resume: bool = field(default=True, metadata=h("continue from the last checkpoint in output_dir"))
    report_to: str = field(default="none", metadata=h("'none', 'tensorboard', 'wandb', ..."))

    def __post_init__(self):
        if self.lora is not None and not isinstance(self.lora, LoraSettings):
            raise ConfigError(f"SFTRecipe.lora must be a mapping of LoraSettings fields or null, got {self.lora!r}")
        for name in (
            "per_device_train_batch_size",
            "gradient_accumulation_steps",
            "max_length",
            "logging_steps",
            "save_steps",
            "save_total_limit",
        ):
            v = getattr(self, name)
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
                raise ConfigError(f"SFTRecipe.{name} must be an integer >= 1, got {v!r}")
        if not (isinstance(self.learning_rate, (int, float)) and self.learning_rate > 0):
            raise ConfigError(f"SFTRecipe.learning_rate must be > 0, got {self.learning_rate!r}")
        if not (isinstance(self.warmup_ratio, (int, float)) and 0 <= self.warmup_ratio < 1):
            raise ConfigError(f"SFTRecipe.warmup_ratio must be in [0, 1), got {self.warmup_ratio!r}")
        if self.dtype not in DTYPES:
            raise ConfigError(f"SFTRecipe.dtype must be one of {DTYPES}, got {self.dtype!r}")
        check_master_weights("SFTRecipe", self.dtype, self.lora, self.adapter)
        paths = (self.data,) if isinstance(self.data, str) else self.data
        if not (isinstance(paths, tuple) and all(isinstance(d, str) for d in paths)):
            raise ConfigError(f"SFTRecipe.data must be a path or a list of paths, got {self.data!r}")
        if len(set(paths)) != len(paths):
            raise ConfigError(f"SFTRecipe.data names a file twice: {list(paths)}")

    @classmethod
    def from_yaml(cls, path: str | Path) -> SFTRecipe:
        return load_recipe(cls, path, {"lora": LoraSettings})


def last_checkpoint(output_dir: str | Path) -> str | None:
    """The newest COMPLETE ``checkpoint-N`` in ``output_dir`` (one whose trainer state was written:
    a run killed while saving leaves a partial folder, which is skipped); None when there is none."""
    d = Path(output_dir)
    if not d.is_dir():
        return None
    done = [
        p for p in d.glob("checkpoint-*") if p.name.split("-")[-1].isdigit() and (p / "trainer_state.json").is_file()
    ]
    return str(max(done, key=lambda p: int(p.name.split("-")[-1]))) if done else None


def finished_result(output_dir: str | Path, recipe: Any) -> dict | None:
    """The recorded result when ``output_dir`` already holds a finished run of this same recipe
    (a rerun returns it instead of training again; resuming a finished run would train one more
    step in transformers 5 / TRL 1.16)."""
    path = Path(output_dir) / RESULT_FILE
    try:
        done = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    same = json.loads(json.dumps(recipe_dict(recipe), default=str)) == done.get("recipe")
    return {**done, "already_finished": True} if same else None


def load_sft_dataset(path: str | Path | tuple[str | Path, ...] | list[str | Path]) -> Any:
    """The prompt/completion columns of an SFT JSONL (or of several, concatenated in order) as a
    ``datasets.Dataset``."""
    from datasets import concatenate_datasets, load_dataset

    paths = [path] if isinstance(path, (str, Path)) else list(path)
    parts = []
    for p in map(Path, paths):
        if not p.is_file():
            raise ConfigError(f"SFT data {p} not found: build it with `lazymem train sft-data --config ...`")
        ds = load_dataset("json", data_files=str(p), split="train")
        missing = {"prompt", "completion"} - set(ds.column_names)
        if missing:
            raise ConfigError(f"{p}: SFT data needs the columns prompt and completion; missing {sorted(missing)}")
        parts.append(ds.select_columns(["prompt", "completion"]))
    return parts[0] if len(parts) == 1 else concatenate_datasets(parts)


def run_sft(recipe: SFTRecipe, callbacks: list | None = None) -> dict:
    """Train; returns (and writes to ``output_dir/train_result.json``) steps, loss, wall time, paths."""
    from trl import SFTConfig, SFTTrainer

    if not recipe.data:
        raise ConfigError("SFTRecipe.data is empty: point it at an SFT JSONL (`lazymem train sft-data`)")
    out = Path(recipe.output_dir)
    if recipe.resume and (done := finished_result(out, recipe)) is not None:
        return done
    dataset = load_sft_dataset(recipe.data)
    tokenizer = load_tokenizer(recipe.base)
    model = load_policy(recipe.base, adapter=recipe.adapter, dtype=recipe.dtype, trainable=True)
    args = SFTConfig(
        output_dir=str(out),
        learning_rate=recipe.learning_rate,
        lr_scheduler_type=recipe.lr_scheduler_type,
        warmup_steps=recipe.warmup_ratio,  # transformers 5: a float in [0, 1) is a ratio of total steps
        num_train_epochs=recipe.num_train_epochs,
        max_steps=recipe.max_steps,
        per_device_train_batch_size=recipe.per_device_train_batch_size,
        gradient_accumulation_steps=recipe.gradient_accumulation_steps,
        max_length=recipe.max_length,
        completion_only_loss=True,
        bf16=recipe.bf16,
        gradient_checkpointing=recipe.gradient_checkpointing,
        logging_steps=recipe.logging_steps,
        save_strategy="steps",
        save_steps=recipe.save_steps,
        save_total_limit=recipe.save_total_limit,
        seed=recipe.seed,
        report_to=recipe.report_to,
        use_cpu=not has_cuda(),
        dataloader_num_workers=0,
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=recipe.lora.peft_config() if recipe.lora and not recipe.adapter else None,
        callbacks=callbacks,
    )
    return train_and_record(
        trainer,
        tokenizer,
        recipe,
        "sft",
        {"adapter": bool(recipe.lora or recipe.adapter), "examples": len(dataset), "init_adapter": recipe.adapter},
    )


def mean_logged_loss(log_history: list) -> float | None:
    """The mean of the per-step losses logged over the whole run (every segment of a resumed run).

    >>> mean_logged_loss([{"loss": 0.5, "step": 1}, {"loss": 0.25, "step": 2}, {"train_loss": 9.0}])
    0.375
    """
    losses = [h["loss"] for h in log_history if isinstance(h.get("loss"), (int, float))]
    return sum(losses) / len(losses) if losses else None


def train_and_record(
    trainer: Any, tokenizer: Any, recipe: Any, stage: str, extra: dict | None = None, before_train: Any = None
) -> dict:
    """Train (resuming from the newest complete checkpoint when the recipe says so), save the final
    model/adapter and tokenizer to ``output_dir/final``, and write ``train_result.json``
    (``wall_s``: this process; ``wall_s_total``: every process that worked on the run).

    ``before_train(checkpoint)`` runs after the resume point is known (e.g. to restore a callback's
    state); ``extra`` is a dict, or a callable returning one after training, merged into the record.
    """
    from lazymem.train.logs import wall_clock_callback

    out = Path(recipe.output_dir)
    resume_from = last_checkpoint(out) if recipe.resume else None
    if before_train is not None:
        before_train(resume_from)
    check_trainable_dtypes(trainer)
    clock = wall_clock_callback(resume_from)
    trainer.add_callback(clock)
    t0 = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=resume_from)
    final = out / "final"
    trainer.save_model(str(final))
    tokenizer.save_pretrained(str(final))
    record = {
        "stage": stage,
        "recipe": recipe_dict(recipe),
        "resumed_from": resume_from,
        "global_step": trainer.state.global_step,
        "train_loss": mean_logged_loss(trainer.state.log_history),
        # transformers divides a resumed segment's summed loss by ALL steps: low after a resume
        "trainer_training_loss": result.training_loss,
        "wall_s": round(time.perf_counter() - t0, 1),
        "wall_s_total": round(clock.total(), 1),
        "segments": clock.segments,
        "final": str(final),
        **((extra() if callable(extra) else extra) or {}),
        "log_history": trainer.state.log_history,
    }
    (out / RESULT_FILE).write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    return record
