"""Stand-ins for the paper's models in ``lazymem train ... --smoke`` (``lazymem.train.smoke``), and the
checks it makes on the models it trains (``weights_moved``, ``reloads``, ``TrainedTokens``).

- ``tiny_policy``: a random Qwen3ForCausalLM (the paper's family: 2 layers, hidden 64, Qwen3's own
  init std 0.02 and 40,960-token context) with the real Qwen3 tokenizer and chat template that ship
  here, where a stage needs weights (Qwen3-4B, the SFT checkpoint).
- ``DecisionRollouts``: rollouts of that policy constrained to the paper's decision-array form. A
  random model never writes a valid array, so every reward would be 0 and GRPO would learn nothing;
  under the constraint the model still chooses every op (its own logits, the recipe's temperature
  and top-p) while the brackets, keys and each KEEP's content (the message's first words, verbatim:
  a key span) are forced, so rewards vary and the judge is asked. The paper's SFT checkpoint writes
  the arrays unconstrained.
- ``judge_verdict``, ``teacher_decisions``: what the reward judge (Qwen3-32B, thinking inline in
  ``content``) and the SFT teacher (DeepSeek in thinking mode, its trace in
  ``message.reasoning_content``) say, scripted from the prompt, for ``lazymem.llm.scripted.ScriptedQwen3``
  behind its ``ScriptedServer`` (an OpenAI-compatible server on a loopback port that behaves as a
  thinking model does over the real Qwen3 tokenizer: think unless ``enable_thinking`` is false,
  ``max_tokens`` and ``stop`` cut-offs, ``thinking_token_budget``, ``continue_final_message``).
  Nothing there is a model; the token counts (the real tokenizer) and the protocol are real.
- ``compact_log_probs``: TRL's log-prob head scores only the loss positions on CPU too, as it does on
  GPUs (each scored position's log-prob is computed as before; a smoke step in seconds, not minutes).

>>> window = ('{"previous_bridge": [], "core_messages": [{"role": "user", "content": "I live in Lisbon.", '
...           '"timestamp": "t"}, {"role": "assistant", "content": "Nice!", "timestamp": "t"}], "next_bridge": []}')
>>> trace, answer = teacher_decisions([{"role": "user", "content": "Query: Where do I live?\\n# History Window\\n"
...                                     + window}])
>>> [(d["op"], d["compressed_content"]) for d in json.loads(answer)]
[('KEEP', 'I live in Lisbon.'), ('DROP', '')]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lazymem.llm.scripted import QWEN3_MAX_MODEL_LEN as MAX_MODEL_LEN
from lazymem.llm.scripted import content_words as _words

SPAN_WORDS = 10  # a constrained KEEP's content: the message's first words (short rollouts on CPU)
TINY = "random Qwen3ForCausalLM: 2 layers, hidden 64, init std 0.02, the shipped Qwen3 tokenizer"


def tiny_policy(out: str | Path, seed: int = 0) -> Path:
    """Save ``TINY`` to ``out`` (reused when it is there) and return the folder."""
    from lazymem.llm.models import tiny_test_model

    out = Path(out)
    if (out / "model.safetensors").is_file():
        return out
    return tiny_test_model(out, seed, max_positions=MAX_MODEL_LEN, init_std=0.02, greedy=False)


def fresh_adapter(base: str | Path, out: str | Path) -> str:
    """A new LoRA adapter (the default LoraSettings, lora_B zero) on ``base``, saved to ``out``: the stand-in for
    an SFT adapter a GRPO recipe continues."""
    from peft import get_peft_model

    from lazymem.train.modeling import LoraSettings, load_policy

    get_peft_model(load_policy(str(base)), LoraSettings().peft_config()).save_pretrained(str(out))
    return str(out)


# --- the policy's rollouts, constrained to the decision array ---------------------------------------------------


def window_texts(prompt: str) -> list[str]:
    """The contents of a window prompt's messages to decide, in order (bridges, core, bridges)."""
    block = prompt.rsplit("# History Window\n", 1)[-1].split("<|im_end|>", 1)[0]
    window = json.loads(block)
    return [m["content"] for part in ("previous_bridge", "core_messages", "next_bridge") for m in window.get(part, [])]


class _Row:
    """One row's plan: forced tokens, and a KEEP/DROP choice at each item's op."""

    def __init__(self, encode: Callable[[str], list[int]], texts: Sequence[str], keep: int, drop: int, eos: int):
        self.encode, self.texts, self.keep, self.drop, self.eos = encode, list(texts), keep, drop, eos
        self.item, self.choosing = 0, False
        self.queue = encode('[{"op": "') if self.texts else encode("[]") + [eos]

    def allowed(self, last: int | None) -> list[int]:
        if self.choosing and last is not None:  # the model just wrote this item's op
            op = "KEEP" if last == self.keep else "DROP"
            span = " ".join(self.texts[self.item].split()[:SPAN_WORDS])
            content = json.dumps(span, ensure_ascii=False)[1:-1] if op == "KEEP" else ""
            self.item += 1
            more = self.item < len(self.texts)
            tail = f'", "compressed_content": "{content}", "reason": ""}}' + (', {"op": "' if more else "]")
            self.queue, self.choosing = self.encode(tail) + ([] if more else [self.eos]), False
        if self.queue:
            return [self.queue.pop(0)]
        if self.item < len(self.texts):
            self.choosing = True
            return [self.keep, self.drop]
        return [self.eos]


class DecisionRollouts:
    """A transformers logits processor: each row writes the paper's decision array for its window prompt,
    one item per message, choosing every op itself (see the module docstring)."""

    def __init__(self, tokenizer: Any):
        self.tok = tokenizer
        self.keep, self.drop = (tokenizer.encode(w, add_special_tokens=False)[0] for w in ("KEEP", "DROP"))
        self.rows: list[_Row] | None = None

    def _encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        last = None
        if self.rows is None:
            prompts = self.tok.batch_decode(input_ids, skip_special_tokens=False)
            self.rows = [
                _Row(self._encode, window_texts(p), self.keep, self.drop, self.tok.eos_token_id) for p in prompts
            ]
        else:
            last = input_ids[:, -1].tolist()
        mask = torch.full_like(scores, float("-inf"))
        for r, row in enumerate(self.rows):
            mask[r, row.allowed(None if last is None else last[r])] = 0.0
        return scores + mask


def constrain_generation(model: Any, tokenizer: Any) -> None:
    """Make every ``model.generate`` call (TRL's rollouts, the curriculum's validation) use ``DecisionRollouts``."""
    if getattr(model.generate, "decision_rollouts", False):
        return
    original = model.generate

    def generate(*args, **kwargs):
        from transformers import LogitsProcessorList

        processors = LogitsProcessorList(kwargs.pop("logits_processor", None) or [])
        processors.append(DecisionRollouts(tokenizer))
        return original(*args, logits_processor=processors, **kwargs)

    generate.decision_rollouts = True
    model.generate = generate


@contextmanager
def compact_log_probs() -> Iterator[bool]:
    """Inside: TRL's fused log-prob head scores only the positions with a loss on CPU too.

    TRL 1.16 scores only those positions on Triton devices (GPUs) and every position elsewhere, so on CPU
    a GRPO step scores the whole ~1,100-token window prompt of every rollout for the ~150 completion tokens
    it needs (8x the work; the same log-probs either way). Yields whether TRL had the switch to set."""
    try:
        from trl.trainer import utils
    except ImportError:
        yield False
        return
    original = getattr(utils, "_use_triton", None)
    if original is None:
        yield False
        return
    utils._use_triton = lambda device: device.type == "cpu" or original(device)
    try:
        yield True
    finally:
        utils._use_triton = original


def ConstrainedRollouts() -> Any:  # noqa: N802 (a TrainerCallback, built when transformers is imported)
    """A TrainerCallback that puts ``DecisionRollouts`` on the policy's ``generate`` once the trainer holds it
    (after TRL wrapped it in PEFT, before the curriculum's first validation)."""
    from transformers import TrainerCallback

    class Constrain(TrainerCallback):
        def on_init_end(self, args, state, control, model=None, processing_class=None, **kw):
            constrain_generation(model, processing_class)

    return Constrain()


def TrainedTokens() -> Any:  # noqa: N802
    """A TrainerCallback keeping ``.trained``: the text of the first training example's loss-bearing tokens, as
    TRL tokenized it (does a ``<think>`` trace survive the chat template into the loss?)."""
    from transformers import TrainerCallback

    class Probe(TrainerCallback):
        trained = ""

        def on_train_begin(self, args, state, control, train_dataloader=None, processing_class=None, **kw):
            row = train_dataloader.dataset[0]
            if "labels" in row:  # TRL folds the completion mask into labels (-100: no loss)
                ids = [t for t in row["labels"] if t != -100]
            else:
                mask = row.get("completion_mask") or row.get("assistant_masks") or []
                ids = [t for t, m in zip(row["input_ids"], mask) if m]
            self.trained = processing_class.decode(ids)

    return Probe()


# --- what a smoke checks on a trained model ---------------------------------------------------------------------


def saved_weights(path: str | Path) -> dict:
    """Every tensor in a saved model or adapter folder (its .safetensors files)."""
    from safetensors.torch import load_file

    out = {}
    for f in sorted(Path(path).glob("*.safetensors")):
        out.update(load_file(str(f)))
    return out


def weights_moved(before: dict, after: dict) -> tuple[bool, str]:
    """(ok, detail): every tensor of a saved model changed (full fine-tuning trains them all); for a saved LoRA
    adapter, every lora_B (zero at the start) left zero."""
    import torch

    if any("lora_" in k for k in after):
        zero = [k for k, v in after.items() if "lora_B" in k and not v.abs().sum()]
        n = sum("lora_B" in k for k in after)
        return bool(n and not zero), (
            f"{n - len(zero)} of {n} lora_B tensors left their zero init"
            + (f"; still zero: {zero[:4]}" if zero else "")
        )
    same = [k for k in before if k in after and torch.equal(before[k].float(), after[k].float())]
    missing = [k for k in before if k not in after]
    return not same and not missing, (
        f"{len(before) - len(same) - len(missing)} of {len(before)} trainable tensors "
        "changed" + (f"; unchanged: {same[:4]}" if same else "") + (f"; not saved: {missing[:4]}" if missing else "")
    )


def reloads(final: str, base: str) -> tuple[bool, str]:
    """(ok, detail): the final model (or adapter on ``base``) loads and generates; the last checkpoint loads."""
    import torch

    from lazymem.train.modeling import load_policy, load_tokenizer
    from lazymem.train.sft import last_checkpoint

    def load(path: str) -> Any:
        if (Path(path) / "adapter_config.json").is_file():
            return load_policy(base, adapter=path, trainable=False)
        return load_policy(path, trainable=False)

    tok, model = load_tokenizer(final), load(final)
    ids = tok.apply_chat_template(
        [{"role": "user", "content": "Hello"}], add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    with torch.no_grad():
        new = model.generate(**ids, max_new_tokens=4, do_sample=False).shape[1] - ids["input_ids"].shape[1]
    ckpt = last_checkpoint(Path(final).parent)
    ok = ckpt is not None and load(ckpt) is not None
    return new > 0 and ok, (
        f"{final} loads and generates {new} tokens; checkpoint {Path(ckpt).name if ckpt else 'MISSING'} loads"
    )


# --- scripted thinking models behind an OpenAI-compatible server -------------------------------------------------


def judge_verdict(messages: Sequence[dict]) -> tuple[str, str]:
    """(trace, answer) of the reward judge: faithfulness from the memory's words found in the source
    message(s), utility from the gold answer's words found in the memory (``quality.parse_quality_judgement``
    reads the answer)."""
    item = json.loads(messages[-1]["content"] if messages[-1]["role"] == "user" else messages[-2]["content"])
    memory = _words(item["constructed_memory"])
    source = set().union(*(_words(m["content"]) for m in item["source_messages"]))
    gold = _words(item["gold_answer"])
    faithful = 2 if memory <= source else 1 if len(memory & source) * 2 >= len(memory) else 0
    useful = 2 if gold and gold <= memory else 1 if memory & (gold | _words(item["referenced_reasoning_chain"])) else 0
    trace = (
        f"The memory has {len(memory)} content words; {len(memory & source)} are in the source message. "
        f"The gold answer's words in it: {sorted(gold & memory)[:8]}."
    )
    return trace, json.dumps({"faithfulness": faithful, "utility": useful, "reason": "scripted word overlap"})


def teacher_decisions(messages: Sequence[dict]) -> tuple[str, str]:
    """(trace, answer) of the SFT teacher: KEEP (verbatim) each message that shares a content word with the
    query, DROP the rest; the trace walks the window message by message."""
    prompt = messages[-1]["content"]
    query = _words(prompt.split("Query: ", 1)[-1].split("\n", 1)[0])
    lines, items = [], []
    for i, text in enumerate(window_texts(prompt), start=1):
        shared = sorted(query & _words(text))
        op = "KEEP" if shared else "DROP"
        lines.append(f"Message {i}: {' '.join(text.split()[:8])} ... -> {op}")
        reason = f"shares {' '.join(shared[:3])} with the query" if shared else "nothing the query asks about"
        items.append({"op": op, "compressed_content": text if shared else "", "reason": reason})
    return "\n".join(lines), json.dumps(items, ensure_ascii=False)
