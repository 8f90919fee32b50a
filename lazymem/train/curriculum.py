"""The reward curriculum (paper Sec. 3.3): lambda_qual moves from 0 to 0.5 once the policy's
format validity on the validation prompts exceeds tau = 0.99.

``FormatCurriculum`` is a ``transformers.TrainerCallback``: every ``eval_steps`` TRL optimizer
steps (and before training, as the paper validates before training) it decodes the validation
prompts greedily with the current policy, runs the strict format gate and the paper's Gate
Fmt. on each output, logs both rates, and when the strict rate exceeds tau sets
``reward.lam`` to the phase-2 weight, once, logging the switch. Its state (lambda, the step
it switched at, every validation) is written into every checkpoint (``curriculum.json``) and
restored on resume (``restore``), so a resumed run does not fall back to phase 1.

The paper validates every 10 *rollout batches* (VERL's training steps); ``lazymem.train.grpo``
converts that to optimizer steps (``GRPORecipe.trl_eval_steps``: 20 in the paper recipe, where a
rollout batch is two optimizer steps) before it reaches ``eval_steps`` here.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lazymem.train.rewards import LAMBDA_PHASE2, TAU, completion_text, curriculum_lambda, format_gate

log = logging.getLogger("lazymem.train")
STATE_FILE = "curriculum.json"  # written into every checkpoint folder

Validator = Callable[[Any, Any], Sequence[str]]  # (model, tokenizer) -> one raw output per validation prompt


def greedy_outputs(
    model: Any, tokenizer: Any, prompts: Sequence[Sequence[Mapping]], max_new_tokens: int, batch_size: int = 8
) -> list[str]:
    """Greedy completions of chat prompts with ``model`` (left-padded batches, special tokens skipped)."""
    import torch

    was_training = model.training
    model.eval()
    side, tokenizer.padding_side = tokenizer.padding_side, "left"
    out: list[str] = []
    try:
        for i in range(0, len(prompts), batch_size):
            texts = [
                tokenizer.apply_chat_template(list(p), tokenize=False, add_generation_prompt=True)
                for p in prompts[i : i + batch_size]
            ]
            enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
            with torch.no_grad():
                gen = model.generate(
                    **enc, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id
                )
            out += tokenizer.batch_decode(gen[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    finally:
        tokenizer.padding_side = side
        if was_training:
            model.train()
    return out


def format_rates(outputs: Sequence[Any], decision_positions: Sequence[Sequence[int]]) -> dict:
    """Strict gate and Gate Fmt. rates of raw outputs (one list of decision positions each).

    >>> ok = '[{"op": "DROP", "compressed_content": "", "reason": ""}]'
    >>> format_rates([ok, "[]", '[{"op": "keep", "compressed_content": "", "reason": ""}]'], [[1], [1], [1]])
    {'n': 3, 'strict_gate': 0.333333, 'gate_fmt': 0.666667}
    """
    verdicts = [format_gate(completion_text(o), p) for o, p in zip(outputs, decision_positions)]
    n = len(verdicts)
    return {
        "n": n,
        "strict_gate": round(sum(v.ok for v in verdicts) / n, 6) if n else 0.0,
        "gate_fmt": round(sum(v.fmt_ok for v in verdicts) / n, 6) if n else 0.0,
    }


class FormatCurriculum:
    """TrainerCallback switching ``reward.lam`` 0 -> phase 2 when validation format validity exceeds tau.

    Args:
        reward: the LazyMemReward whose ``lam`` is scheduled (its judge must be set for phase 2).
        validation: rows with ``prompt`` (chat messages) and ``decision_positions``.
        eval_steps: validate every this many TRL optimizer steps, and at step 0 (paper: every 10
            rollout batches, converted by ``GRPORecipe.trl_eval_steps``).
        tau: the format-validity threshold (paper: 0.99).
        phase2: lambda after the switch (paper: 0.5).
        max_new_tokens: decoding budget of a validation output.
        validator: ``(model, tokenizer) -> raw outputs`` replacing greedy decoding (tests, or a
            vLLM server on GPU nodes).
    """

    def __init__(
        self,
        reward: Any,
        validation: Sequence[Mapping],
        eval_steps: int = 10,
        tau: float = TAU,
        phase2: float = LAMBDA_PHASE2,
        max_new_tokens: int = 3072,
        validator: Validator | None = None,
    ):
        from transformers import TrainerCallback

        if eval_steps < 1:
            raise ValueError(f"eval_steps must be >= 1, got {eval_steps}")
        # Subclassing at run time keeps `import lazymem.train.curriculum` free of transformers.
        self.__class__ = type("FormatCurriculum", (FormatCurriculum, TrainerCallback), {})
        self.reward, self.eval_steps, self.tau, self.phase2 = reward, eval_steps, tau, phase2
        self.prompts = [r["prompt"] for r in validation]
        self.positions = [r["decision_positions"] for r in validation]
        self.max_new_tokens, self.validator = max_new_tokens, validator
        self.switched_at: int | None = None
        self.history: list[dict] = []  # one entry per validation: step, strict_gate, gate_fmt, lam

    # TrainerCallback hooks ------------------------------------------------------------------------

    def on_train_begin(self, args, state, control, model=None, processing_class=None, **kw):
        if state.global_step == 0 and not self.history:
            self._validate(state, model, processing_class)

    def on_step_end(self, args, state, control, model=None, processing_class=None, **kw):
        if state.global_step % self.eval_steps == 0:
            self._validate(state, model, processing_class)
            control.should_log = True

    def on_log(self, args, state, control, logs=None, **kw):
        if logs is not None and self.history:
            last = self.history[-1]
            logs.update(
                {
                    "curriculum/lambda": self.reward.lam,
                    "curriculum/strict_gate": last["strict_gate"],
                    "curriculum/gate_fmt": last["gate_fmt"],
                }
            )

    def on_save(self, args, state, control, **kw):
        """Write the schedule beside the checkpoint the trainer just saved (read back on resume)."""
        ckpt = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if ckpt.is_dir():
            (ckpt / STATE_FILE).write_text(json.dumps(self.state(), indent=1) + "\n", encoding="utf-8")

    # checkpointed state ----------------------------------------------------------------------------

    def state(self) -> dict:
        """lambda, the step it switched at, and every validation so far (JSON-ready)."""
        return {"lam": self.reward.lam, "switched_at": self.switched_at, "history": self.history}

    def restore(self, checkpoint: str | Path) -> bool:
        """Continue the schedule saved with ``checkpoint`` (False when it holds none)."""
        path = Path(checkpoint) / STATE_FILE
        if not path.is_file():
            return False
        saved = json.loads(path.read_text(encoding="utf-8"))
        self.switched_at = saved.get("switched_at")
        self.history = list(saved.get("history") or [])
        self.reward.lam = saved.get("lam", self.reward.lam)
        return True

    # the schedule ------------------------------------------------------------------------------------

    def _validate(self, state, model, tokenizer) -> dict:
        if self.validator is not None:
            outputs = self.validator(model, tokenizer)
        else:
            outputs = greedy_outputs(model, tokenizer, self.prompts, self.max_new_tokens)
        rates = format_rates(outputs, self.positions)
        switched = self.switched_at is not None
        lam = curriculum_lambda(rates["strict_gate"], switched=switched, tau=self.tau, phase2=self.phase2)
        if not switched and lam != self.reward.lam:
            self.reward.lam = lam
            self.switched_at = state.global_step
            log.warning(
                "curriculum: validation format validity %.4f > tau %.2f at step %d: lambda_qual -> %.2f "
                "(phase 2: the quality reward is on)",
                rates["strict_gate"],
                self.tau,
                state.global_step,
                lam,
            )
        entry = {"step": state.global_step, **rates, "lam": self.reward.lam}
        self.history.append(entry)
        state.log_history.append({f"curriculum/{k}": v for k, v in entry.items()} | {"step": state.global_step})
        return entry
