"""Which llama.cpp batches give the logits of one token at a time, bit for bit (the memory model's GGUF, CPU).

    python scripts/check_batch_exactness.py [--tokens 24] [--out docs/results/batch_exactness.json]

The batched engine (``extra_body.decode: batched``) claims the one-at-a-time engine's decisions because a step
holds one token of each of several sequences. Two other levers would put several tokens of *one* sequence in a
step: verifying drafted tokens (speculative decoding) and teacher-forcing the trace's predictable text. They
keep decisions only where such a step gives the logits of one token at a time. This check evaluates a real
window prompt (the demo's first window, rendered as the pipeline renders it), then the default's own
continuation of it (greedy, one token at a time), and compares each continuation token's logits against:

- ``several sequences``: the same tokens, each step also holding one token of another sequence (the batched
  engine's steps);
- ``chunks of k``: the continuation evaluated k tokens of the sequence at a time (a draft of k - 1 tokens).

Printed and written: the largest absolute logit difference and whether the greedy token agrees, per case.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=24, help="continuation tokens compared")
    ap.add_argument("--out", default=None, help="write the result as JSON here")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    import llama_cpp

    from lazymem.construct import window_prompts
    from lazymem.data import load_dataset
    from lazymem.eval.config import EvalConfig, select_questions
    from lazymem.llm import LLMConfig, make_client
    from lazymem.llm.llamacpp_batch import BatchContext
    from lazymem.retrieve import Retriever, build_windows

    threads = os.cpu_count() or 1
    config = EvalConfig.from_yaml("configs/eval/demo.yaml")
    backend = make_client(
        LLMConfig(
            backend="llamacpp", model="smollm2-offline", adapter="lazymem-135m", num_threads=threads, batch_size=1
        )
    )
    dataset = load_dataset(config.dataset)
    q = select_questions(dataset, config)[0]
    history = dataset.history(q)
    pool = Retriever(config.pipeline.retrieval).retrieve(history, q.text)
    windows = build_windows(history, pool.positions, config.pipeline.window, gold=q.evidence)
    prompt = window_prompts(history, q, windows)[0]
    free, tok = backend.load()
    ids = tok(backend.render(list(prompt.messages)), add_special_tokens=False)["input_ids"]

    llm = free.get()  # the instance's weights; the check's own context over them
    ctx = BatchContext(llm, n_threads=threads, max_seqs=2)
    lc, n_vocab = ctx.lc, ctx.n_vocab

    def logits(at: int) -> np.ndarray:
        return np.ctypeslib.as_array(lc.llama_get_logits_ith(ctx.ctx.ctx, at), shape=(n_vocab,)).copy()

    def prefill(seq: int) -> None:
        lc.llama_memory_seq_rm(ctx.mem, seq, -1, -1)
        for at in range(0, len(ids), ctx.n_batch):
            chunk = range(at, min(at + ctx.n_batch, len(ids)))
            ctx._decode([(ids[p], p, seq, p == len(ids) - 1) for p in chunk])

    # the reference: greedy, one token at a time
    prefill(1)
    cont, ref = [], []
    nxt = int(np.argmax(logits(-1)))
    for i in range(args.tokens):
        cont.append(nxt)
        ctx._decode([(nxt, len(ids) + i, 1, True)])
        ref.append(logits(0))
        nxt = int(np.argmax(ref[-1]))
    ref_a = np.stack(ref)

    def compare(rows: list[np.ndarray]) -> dict:
        got = np.stack(rows)
        return {
            "max_abs_diff": float(np.abs(got - ref_a).max()),
            "bit_identical": bool(np.array_equal(got, ref_a)),
            "greedy_agrees": int((got.argmax(1) == ref_a.argmax(1)).sum()),
            "tokens": len(rows),
        }

    result: dict = {"prompt_tokens": len(ids), "continuation": tok.decode(cont), "cases": {}}
    # several sequences a step: sequence 1 decodes the continuation beside sequence 2's own
    prefill(1)
    prefill(2)
    rows = []
    for i, t in enumerate(cont):
        ctx._decode([(t, len(ids) + i, 1, True), (cont[-1 - i], len(ids) + i, 2, True)])
        rows.append(logits(0))
    result["cases"]["several sequences"] = compare(rows)
    for k in (2, 3, 4, 8):
        prefill(1)
        rows = []
        for at in range(0, len(cont), k):
            chunk = cont[at : at + k]
            ctx._decode([(t, len(ids) + at + j, 1, True) for j, t in enumerate(chunk)])
            rows.extend(logits(j) for j in range(len(chunk)))
        result["cases"][f"chunks of {k}"] = compare(rows)
    ctx.close()
    result["llama_cpp"] = llama_cpp.__version__
    result["system"] = llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()
    for name, c in result["cases"].items():
        print(
            f"{name:>18}: max |logit diff| {c['max_abs_diff']:.3g}, bit-identical {c['bit_identical']}, "
            f"greedy token agrees in {c['greedy_agrees']} of {c['tokens']}"
        )
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
