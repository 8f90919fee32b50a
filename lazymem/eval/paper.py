"""The paper's reported numbers, for overlays and side-by-side tables (never mixed with measured ones).

``REPORTED[dataset][system]`` holds the overall LLM-judge accuracy (LJ) of the paper's Table
"Accuracy on LongMemEval and LoCoMo" (tab:main_accuracy) and the answer-context memory tokens
of its Table tab:answer_context_memory_tokens (Qwen3-32B tokenizer; None where the paper has
"--" or "N/A"). The paper's setup differs from a CPU run here (Qwen3-32B answerer with
thinking, Qwen3-Embedding-8B, a DeepSeek judge): anything drawn from this table is labelled
"reported". tests/test_paper_numbers.py re-reads both tables from the paper's LaTeX source.

>>> REPORTED["locomo"]["LazyMem-4B"]
{'lj': 0.68, 'tokens': 697, 'mpm': 'LazyMem-4B'}

A measured system whose method the paper ran but not on that benchmark (Oracle Session on
LoCoMo: the paper's Table 1 cell is empty) is the project's extension, and every table and
figure says so through ``system_label``:

>>> system_label("oracle_session", "oracle_session", "../shared/data/locomo/locomo10.json#paper")
'oracle_session (ours, not in the paper)'
>>> system_label("oracle_session", "oracle_session", "longmemeval_s_cleaned")
'oracle_session'
"""

from __future__ import annotations

from lazymem.pipeline.methods import method_class, method_names

SOURCE = "LazyMem paper (../shared/seed), tables tab:main_accuracy and tab:answer_context_memory_tokens"

# system: (MPM, LongMemEval LJ, LoCoMo LJ, LongMemEval tokens, LoCoMo tokens)
_ROWS = {
    "Oracle Turn": ("None", 0.82, 0.75, 515, 171),
    "Oracle Session": ("None", 0.84, None, 5778, None),
    "RAG Top20": ("None", 0.71, 0.67, 8401, 1658),
    "RAG Top50": ("None", 0.75, 0.66, 14628, 3834),
    "LightMem": ("Qwen3-32B", 0.79, 0.47, 2497, 2445),
    "StructMem": ("Qwen3-32B", 0.82, 0.52, 4483, 5010),
    "Mem0": ("Qwen3-32B", 0.64, 0.45, 1731, 8881),
    "MemoryBank": ("Qwen3-32B", 0.68, 0.41, 4284, 1599),
    "MemSkill": ("Controller + Qwen3-32B", 0.57, 0.43, 3086, 2358),
    "MemT": ("Trained 4B", 0.61, 0.57, None, None),
    "NanoMemory": ("Qwen3-32B", 0.80, 0.68, 161, 133),
    "LazyMem (Qwen3-32B)": ("Qwen3-32B", 0.93, 0.69, 1041, 1945),
    "LazyMem-4B": ("LazyMem-4B", 0.85, 0.68, 213, 697),
}

REPORTED: dict[str, dict[str, dict]] = {
    "longmemeval": {s: {"lj": lme, "tokens": tl, "mpm": m} for s, (m, lme, _, tl, _) in _ROWS.items()},
    "locomo": {s: {"lj": lo, "tokens": tk, "mpm": m} for s, (m, _, lo, _, tk) in _ROWS.items() if lo is not None},
}

# The paper's Table 2 (tab:window_radius): All@50 by window radius w, as ALL_AT_50[benchmark][w].
ALL_AT_50: dict[str, dict[int, float]] = {
    "longmemeval": {0: 0.950, 1: 0.970, 2: 0.980, 3: 0.980},
    "locomo": {0: 0.781, 1: 0.847, 2: 0.889, 3: 0.892},
}
_BENCHMARK_LABEL = {"longmemeval": "LongMemEval (paper)", "locomo": "LoCoMo (paper)"}


def all_at_50_reference(which: bool | str = True) -> dict[str, dict[int, float]]:
    """The paper's All@50 lines for ``viz.all_at_k_vs_w(paper=...)``, labelled "(paper)".

    ``which``: True or "both" for both benchmarks, "locomo" or "longmemeval" for one, False or "" for none.

    >>> all_at_50_reference("locomo")
    {'LoCoMo (paper)': {0: 0.781, 1: 0.847, 2: 0.889, 3: 0.892}}
    """
    if which is False or which == "":
        return {}
    if which is True or which == "both":
        return {_BENCHMARK_LABEL[b]: dict(v) for b, v in ALL_AT_50.items()}
    if isinstance(which, str) and which.lower() in ALL_AT_50:
        return {_BENCHMARK_LABEL[which.lower()]: dict(ALL_AT_50[which.lower()])}
    raise ValueError(f"paper reference {which!r}: choose 'locomo', 'longmemeval', 'both', True or ''")


# Settings the paper's evaluation leaves open (Sec. 4 and App. "Experimental Setup Details" name the
# models, n, w, L, s and the judge, not these): the project's choice, shown by `eval-table --dry-run`
# and marked in the paper configs (configs/eval/paper_*.yaml), so that no number reads as the paper's.
PROJECT_CHOICES = {
    "pipeline.retrieval.rrf_k": "RRF's k: 60, Cormack et al.'s constant (the paper names RRF, not its k)",
    "pipeline.retrieval.depth": "each ranked list cut at 100 before fusion (the paper does not say)",
    "pipeline.retrieval.rerank_depth": "the reranker scores the top 100 fused candidates (the paper does not say)",
    "pipeline.retrieval.query_prompt_name": "None: Qwen3-Embedding's own 'query' instruction prompt, as "
    "sentence-transformers ships it (the paper names no instruction)",
    "pipeline.mpm_sampling": "greedy (temperature 0), 3,072 new tokens (the RL generation length); the paper "
    "gives no inference decoding for the MPM",
    "pipeline.answer_sampling": "greedy (temperature 0), 4,096 new tokens with thinking on; the paper gives no "
    "answerer decoding",
}

# the project's methods that are systems of the paper's Table 1, by its name there (``Method.in_paper``)
PAPER_SYSTEM = {name: method_class(name).label for name in method_names() if method_class(name).in_paper}
NOT_IN_PAPER = "ours, not in the paper"


def benchmark_of(dataset: str | None) -> str | None:
    """ "locomo" or "longmemeval" for a data set spec or name that names one, else None (synthetic, unknown).

    >>> benchmark_of("locomo10-paper"), benchmark_of("longmemeval_s_cleaned"), benchmark_of("synthetic:seed=0")
    ('locomo', 'longmemeval', None)
    """
    name = (dataset or "").lower()
    return next((b for b in ("locomo", "longmemeval") if b in name), None)


def not_in_paper(method: str | None, dataset: str | None) -> bool:
    """True when the paper ran ``method`` as a system but reports no number for it on ``dataset``'s benchmark."""
    bench = benchmark_of(dataset)
    return bench is not None and method in PAPER_SYSTEM and PAPER_SYSTEM[method] not in REPORTED[bench]


def system_label(system: str, method: str | None, dataset: str | None) -> str:
    """How a measured system is shown: its name, marked "(ours, not in the paper)" where ``not_in_paper``."""
    return f"{system} ({NOT_IN_PAPER})" if not_in_paper(method, dataset) else system
