"""Load the model a training stage starts from: a base model, optionally with a PEFT adapter.

``base`` is anything ``lazymem.llm.models.resolve_model`` understands (the offline alias
``smollm2-offline``, a local directory, a hub id online). An ``adapter`` directory (a PEFT
LoRA saved by the SFT stage) is loaded on top, trainable, so GRPO continues it and TRL keeps
a frozen copy of it as the reference policy (the paper's pi_ref = the SFT checkpoint).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lazymem.errors import ConfigError

DTYPES = ("float32", "bfloat16", "float16")
HALF = ("bfloat16", "float16")  # weight dtypes an optimizer cannot update finely without a float32 master copy


@dataclass(frozen=True)
class LoraSettings:
    """A LoRA adapter's shape (peft.LoraConfig); None in a recipe means full fine-tuning."""

    r: int = field(default=16, metadata={"help": "rank"})
    alpha: int = field(default=32, metadata={"help": "scaling numerator (lora_alpha)"})
    dropout: float = field(default=0.05, metadata={"help": "dropout on the adapter input"})
    target_modules: tuple[str, ...] | str = field(
        default="all-linear", metadata={"help": "module names to adapt, or 'all-linear'"}
    )
    layers: tuple[int, ...] | None = field(
        default=None,
        metadata={
            "help": (
                "only these decoder layers (peft layers_to_transform; target_modules must then be a list). "
                "Upper layers only: backward stops at the lowest adapted layer (1.48x faster steps on CPU for "
                "layers 15-29 of SmolLM2's 30)"
            )
        },
    )

    def __post_init__(self):
        if not (isinstance(self.r, int) and self.r >= 1 and isinstance(self.alpha, int) and self.alpha >= 1):
            raise ConfigError(f"LoraSettings: r and alpha must be integers >= 1, got r={self.r!r} alpha={self.alpha!r}")
        if not (0.0 <= float(self.dropout) < 1.0):
            raise ConfigError(f"LoraSettings.dropout must be in [0, 1), got {self.dropout!r}")
        if self.layers is not None:
            if not (
                isinstance(self.layers, (list, tuple))
                and self.layers
                and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in self.layers)
            ):
                raise ConfigError(
                    f"LoraSettings.layers must be a non-empty list of layer indices >= 0, got {self.layers!r}"
                )
            if isinstance(self.target_modules, str):
                raise ConfigError(
                    "LoraSettings.layers needs target_modules as a list of module names "
                    "(e.g. [q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj]), "
                    f"not {self.target_modules!r}"
                )
            object.__setattr__(self, "layers", tuple(self.layers))

    def peft_config(self):
        from peft import LoraConfig

        targets = self.target_modules if isinstance(self.target_modules, str) else list(self.target_modules)
        return LoraConfig(
            r=self.r,
            lora_alpha=self.alpha,
            lora_dropout=self.dropout,
            target_modules=targets,
            layers_to_transform=list(self.layers) if self.layers else None,
            task_type="CAUSAL_LM",
        )


def check_master_weights(where: str, dtype: str, lora: Any, adapter: str | None = None) -> None:
    """Refuse full-parameter training of half-precision weights (a recipe's ``dtype`` with ``lora: null``).

    AdamW under plain data-parallel accelerate updates the weights in their own dtype: a bf16 weight
    moves only when the update exceeds half its spacing (2^-8 of its size), so at the paper's learning
    rates most updates are rounded away (measured on CPU: after 10 steps on weights of scale 0.02, 2.0%
    of weights changed at lr 1e-6 and 7.4% at 5e-6, against 100% in float32). The paper's DeepSpeed
    ZeRO-2 (SFT) and FSDP (RL) keep float32 master weights; here that is float32 weights with bf16
    compute (``dtype: float32`` + ``bf16: true``). A LoRA adapter (``lora`` or ``adapter``) on a bf16 base
    is fine: PEFT keeps adapter weights in float32 (``autocast_adapter_dtype``).

    >>> check_master_weights("SFTRecipe", "float32", None)
    >>> check_master_weights("SFTRecipe", "bfloat16", LoraSettings())
    >>> check_master_weights("SFTRecipe", "bfloat16", None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lazymem.errors.ConfigError: SFTRecipe.dtype='bfloat16' with lora: null (full-parameter training): ...
    """
    if dtype in HALF and lora is None and not adapter:
        raise ConfigError(
            f"{where}.dtype={dtype!r} with lora: null (full-parameter training): the optimizer would update the "
            f"{dtype} weights themselves, with no float32 master copy (plain data-parallel accelerate keeps none), so "
            "updates below half a weight's spacing (2^-8 of its size in bfloat16) are lost: at learning rate 1e-6 "
            "only ~2% of weights of scale 0.02 move in 10 AdamW steps. Set dtype: float32 with bf16: true (float32 "
            "weights, bf16 compute: what the paper's DeepSpeed ZeRO-2 / FSDP runs keep), or train a LoRA adapter "
            "(lora: {r: ..., alpha: ...}; PEFT keeps adapter weights in float32)"
        )


def check_trainable_dtypes(trainer: Any) -> None:
    """Refuse to train when a trainable parameter is bf16/fp16 and no DeepSpeed engine keeps float32 master
    weights (e.g. a PEFT module left in the base dtype): the same loss as ``check_master_weights``, caught on
    the model the trainer will really update."""
    if getattr(trainer, "is_deepspeed_enabled", False):
        return  # ZeRO with bf16 keeps float32 master weights in its optimizer
    half = [
        (n, str(p.dtype).replace("torch.", ""))
        for n, p in trainer.model.named_parameters()
        if p.requires_grad and str(p.dtype).replace("torch.", "") in HALF
    ]
    if half:
        raise ConfigError(
            f"{len(half)} trainable parameters are half precision (first: {half[0][0]}, {half[0][1]}) "
            "and nothing keeps float32 master weights: their small updates would be rounded away. "
            "Load the weights in float32 (dtype: float32, bf16: true for bf16 compute) or launch "
            "with a DeepSpeed config (configs/recipes/lazymem-4b-paper/accelerate_zero2.yaml)"
        )


def load_tokenizer(base: str) -> Any:
    """The base model's tokenizer, padded on the left (generation) with a pad token set."""
    from transformers import AutoTokenizer

    from lazymem.llm.models import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model(base))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def load_policy(base: str, adapter: str | None = None, dtype: str = "float32", trainable: bool = True) -> Any:
    """The base model (resolved offline aliases included), with ``adapter`` on top when given."""
    import torch
    from transformers import AutoModelForCausalLM

    from lazymem.llm.models import resolve_model

    if dtype not in DTYPES:
        raise ConfigError(f"dtype {dtype!r}: must be one of {DTYPES}")
    try:
        model = AutoModelForCausalLM.from_pretrained(resolve_model(base), dtype=getattr(torch, dtype))
    except OSError as e:
        raise OSError(
            f"base model {base!r} could not be loaded: {e}\nOffline, use 'smollm2-offline' or a local "
            "directory; a hub id needs the network."
        ) from e
    if adapter:
        from peft import PeftModel

        from lazymem.llm.models import resolve_adapter

        try:
            model = PeftModel.from_pretrained(model, resolve_adapter(adapter), is_trainable=trainable)
        except (OSError, ValueError) as e:
            raise OSError(f"adapter {adapter!r} could not be loaded on {base!r}: {e}") from e
    return model


def has_cuda() -> bool:
    """Whether torch sees a CUDA GPU (trainers run on CPU otherwise)."""
    import torch

    return torch.cuda.is_available()
