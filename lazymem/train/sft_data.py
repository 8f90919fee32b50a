"""SFT data (paper Sec. 3.3 and App. "SFT data construction"): teacher-annotated query-window pairs.

``build_sft_data(SFTDataConfig(...)) -> card`` runs, for training questions sampled by type:

1. the real query path's first steps: hybrid retrieval and windowing (``question_windows``,
   one shared Retriever) and the one window-prompt builder (``window_prompts``), so every
   prompt is byte-identical to what inference sends the MPM;
2. the teacher on every window (``lazymem.train.teacher``): an LLM client, all windows of a
   batch of questions in one ``generate`` call, or the explicit gold-label teacher;
3. discards (failed call, gate failure kind, dropped gold), counted by reason;
4. window-level balancing: every window with a KEEP, and as many sampled all-DROP windows;
5. ``sft.jsonl`` in TRL's conversational prompt/completion form with metadata columns,
   ``annotations.jsonl`` (every window's raw output and verdict) and the data card.

Question selection (``select_questions``, ``sample_by_type``, ``HeldOutError``) lives in
``lazymem.train.selection``, shared with RL prompts; it is re-exported here. Every row carries
its source's style (``lazymem.data.spec_style``) and its windowing's shape ``[w, L, s]``.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lazymem.construct import BRIDGES, WindowPrompt, window_prompts
from lazymem.data import DEFAULT_SPEC, load_dataset
from lazymem.data.datasets import spec_style
from lazymem.errors import ConfigError, check_fields
from lazymem.fields import h, require
from lazymem.llm import LLMConfig, Sampling
from lazymem.pipeline import question_windows
from lazymem.retrieve import RetrievalConfig, WindowConfig
from lazymem.train.selection import HELD_OUT_HISTORIES, HeldOutError, sample_by_type, select_questions  # noqa: F401
from lazymem.train.teacher import GOLD_TEACHERS, GOLD_TRACE, GOLD_TRACE_NUMBERED, KEEP_STYLES

if TYPE_CHECKING:
    from lazymem.llm import LLMClient
    from lazymem.records import Dataset, History, Question

# The paper gives no teacher decoding settings; a high-thinking trace needs room (its mean target is 873 tokens).
DEFAULT_TEACHER_SAMPLING = Sampling(temperature=0.0, max_tokens=8192)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


@dataclass(frozen=True)
class PairsConfig:
    """Which questions, and how their query-window pairs are built (shared by SFT data and RL prompts)."""

    datasets: tuple[str, ...] = field(default=(DEFAULT_SPEC,), metadata=h("dataset SPECs (lazymem.data.load_dataset)"))
    split: str | None = field(
        default="train", metadata=h("split of the paper's stratified split; None = all questions")
    )
    split_seed: int = field(default=42, metadata=h("seed of the stratified split (the paper's: 42)"))
    histories: tuple[str, ...] = field(
        default=(), metadata=h("only these history ids, e.g. LoCoMo conv-26..conv-48 (empty = all)")
    )
    types: tuple[str, ...] = field(
        default=(), metadata=h("only these question types, names or abbreviations (empty = all)")
    )
    questions: int | None = field(
        default=None, metadata=h("at most this many questions, sampled in proportion to type; None = all")
    )
    per_type: Mapping[str, int] | None = field(
        default=None, metadata=h("exact questions per type instead of `questions`")
    )
    seed: int = field(default=0, metadata=h("seed of question sampling and balancing"))
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig, metadata=h("as the pipeline's retrieval:"))
    window: WindowConfig = field(default_factory=WindowConfig, metadata=h("as the pipeline's window: (w, L, s)"))
    extra_windows: tuple[WindowConfig, ...] = field(
        default=(),
        metadata=h(
            "more windowings of the same questions (e.g. {w: 1, L: 4, s: 3}): windows of every size in training"
        ),
    )
    bridges: str = field(default="none", metadata=h(f"as the pipeline's bridges: one of {BRIDGES}"))
    output_dir: str = field(default="runs/train_data", metadata=h("where the JSONL files and the data card go"))
    progress: bool = field(default=True, metadata=h("tqdm bar over questions"))

    def __post_init__(self):
        for name in ("datasets", "histories", "types"):
            v = getattr(self, name)
            v = (v,) if isinstance(v, str) else v
            self._need(
                isinstance(v, (list, tuple)) and all(isinstance(x, str) and x for x in v),
                name,
                "must be a list of non-empty strings",
            )
            object.__setattr__(self, name, tuple(v))
        self._need(len(self.datasets) >= 1, "datasets", "needs at least one dataset SPEC")
        self._need(
            self.split in (None, "train", "validation", "test"), "split", "must be train, validation, test or None"
        )
        self._need(self.split != "test", "split", "the test split is never training data")
        self._need(_is_int(self.split_seed), "split_seed", "must be an integer")
        self._need(_is_int(self.seed), "seed", "must be an integer")
        self._need(
            self.questions is None or (_is_int(self.questions) and self.questions >= 1),
            "questions",
            "must be None (all) or an integer >= 1",
        )
        if self.per_type is not None:
            self._need(
                isinstance(self.per_type, Mapping)
                and all(isinstance(k, str) and _is_int(n) and n >= 0 for k, n in self.per_type.items()),
                "per_type",
                "must map type names to integers >= 0",
            )
            self._need(self.questions is None, "per_type", "set questions or per_type, not both")
            object.__setattr__(self, "per_type", dict(self.per_type))
        self._need(isinstance(self.retrieval, RetrievalConfig), "retrieval", "must be a RetrievalConfig")
        self._need(isinstance(self.window, WindowConfig), "window", "must be a WindowConfig")
        extra = self.extra_windows
        self._need(
            isinstance(extra, (list, tuple)) and all(isinstance(w, WindowConfig) for w in extra),
            "extra_windows",
            "must be a list of window configs ({w, L, s})",
        )
        object.__setattr__(self, "extra_windows", tuple(extra))
        self._need(self.bridges in BRIDGES, "bridges", f"must be one of {BRIDGES}")
        self._need(isinstance(self.output_dir, str) and self.output_dir != "", "output_dir", "must be a directory path")
        self._need(isinstance(self.progress, bool), "progress", "must be true or false")

    def _need(self, ok: bool, name: str, allowed: str) -> None:
        """``require`` naming this class (a subclass, e.g. RLDataConfig, names itself) and the field's value."""
        require(ok, type(self).__name__, name, getattr(self, name), allowed)

    _SECTIONS = {"retrieval": RetrievalConfig, "window": WindowConfig}

    @classmethod
    def from_dict(cls, values: Mapping):
        """Build from a mapping (a whole configs/recipes/*/data*.yaml); errors name the bad field."""
        if not isinstance(values, Mapping):
            raise ConfigError(f"{cls.__name__}: expected a mapping, got {type(values).__name__}")
        check_fields(cls, values, cls.__name__)
        v = dict(values)
        for name, builder in cls._SECTIONS.items():
            if isinstance(v.get(name), Mapping):
                check_fields(builder, v[name], f"{cls.__name__}.{name}")
                v[name] = builder(**v[name])
        if isinstance(v.get("extra_windows"), (list, tuple)):
            items = []
            for i, w in enumerate(v["extra_windows"]):
                if isinstance(w, Mapping):
                    check_fields(WindowConfig, w, f"{cls.__name__}.extra_windows[{i}]")
                    w = WindowConfig(**w)
                items.append(w)
            v["extra_windows"] = tuple(items)
        return cls(**v)

    @classmethod
    def from_yaml(cls, path: str):
        """Load a YAML data config (an empty file: every default); ConfigError naming the file when bad."""
        from lazymem.yamlio import read_mapping

        return cls.from_dict(read_mapping(path, what="data config", allow_empty=True))

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


@dataclass(frozen=True)
class QueryWindow:
    """One query-window pair: a question and one of its windows as the MPM sees it."""

    dataset: str  # the SPEC it came from
    history: History
    question: Question
    prompt: WindowPrompt  # messages, decision positions, gold labels, window
    index: int  # the window's index among its question's windows
    shape: tuple[int, int, int] = (2, 8, 7)  # (w, L, s) of the windowing that made it


def load_sources(config: PairsConfig) -> tuple[list[Dataset], list[dict]]:
    """The datasets and their card entries (spec, name, source, sha256)."""
    ds = [load_dataset(spec) for spec in config.datasets]
    return ds, [
        {"spec": s, "name": d.name, "source": d.source, "sha256": d.sha256} for s, d in zip(config.datasets, ds)
    ]


def query_window_pairs(
    datasets: Sequence[Dataset], selected: Sequence[tuple[int, Question]], config: PairsConfig, desc: str = "questions"
) -> Iterator[list[QueryWindow]]:
    """Each selected question's query-window pairs (one list per question), questions grouped
    by history so each history is indexed once; a tqdm bar counts questions. With
    ``extra_windows`` a question's list holds the windows of every windowing, in config order."""
    from tqdm.auto import tqdm

    from lazymem.retrieve import Retriever

    retriever = Retriever(config.retrieval)
    order = sorted(range(len(selected)), key=lambda i: (selected[i][0], selected[i][1].history_id, i))
    for i in tqdm(order, desc=desc, unit="q", disable=not config.progress):
        k, q = selected[i]
        history = datasets[k].history(q)
        prompts = []
        for window in (config.window, *config.extra_windows):
            _, windows = question_windows(history, q, retriever, window)
            prompts += [
                (p, (window.w, window.L, window.s)) for p in window_prompts(history, q, windows, window, config.bridges)
            ]
        yield [QueryWindow(config.datasets[k], history, q, p, j, shape) for j, (p, shape) in enumerate(prompts)]


def gold_in_windows(pairs: Iterable[QueryWindow]) -> int:
    """How many distinct (question, gold message) pairs some window shows: retrieval's gold recall."""
    return len(
        {
            (p.dataset, p.question.id, pos)
            for p in pairs
            for pos, gold in zip(p.prompt.decision_positions, p.prompt.gold_labels)
            if gold
        }
    )


def pair_columns(pair: QueryWindow) -> dict:
    """Metadata columns every training row carries (JSON-ready)."""
    p, q = pair.prompt, pair.question
    return {
        "dataset": pair.dataset,
        "style": spec_style(pair.dataset),
        "question_id": q.id,
        "question_type": q.type,
        "history_id": q.history_id,
        "window_index": pair.index,
        "window_shape": list(pair.shape),
        "window_positions": list(p.window.positions),
        "decision_positions": list(p.decision_positions),
        "gold_labels": list(p.gold_labels),
        "n_gold": sum(p.gold_labels),
    }


# --- SFT ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SFTDataConfig(PairsConfig):
    """SFT data: PairsConfig plus the teacher and balancing; the keys of configs/recipes/*/data*.yaml."""

    questions: int | None = field(default=100, metadata=h("at most this many, by type (the paper: 100 of 360)"))
    teacher: LLMConfig | str | None = field(
        default=None,
        metadata=h(
            "required: an LLM config, 'gold' (the offline gold-label teacher), 'gold-trace' "
            "(the same with a think trace walking the window message by message) or "
            "'gold-trace-numbered' (that, each item's reason naming its message number)"
        ),
    )
    teacher_sampling: Sampling = field(default=DEFAULT_TEACHER_SAMPLING, metadata=h("teacher decoding"))
    teacher_keep: str = field(
        default="verbatim",
        metadata=h(
            "what a gold teacher's KEEP holds: 'verbatim' (the whole message), 'key_span' (its sentence holding the "
            "most of the answer's words: lazymem.train.teacher.key_span; the whole message when none does) or "
            "'content' (a content adapter's targets: key-span gold and the extractive processor's non-gold keeps cut "
            "to their sentence most like the query, lazymem.train.teacher.content_keeps; never a decision target)"
        ),
    )
    teacher_reasoning: bool = field(
        default=True,
        metadata=h(
            "a model teacher's separate reasoning (reasoning_content / "
            "reasoning) goes in the target as <think>...</think>"
        ),
    )
    batch_questions: int = field(default=16, metadata=h("questions whose windows go in one generate call"))
    balance: bool = field(
        default=True, metadata=h("pair the windows with a KEEP with as many sampled all-DROP windows")
    )
    max_length: int = field(
        default=2048,
        metadata=h(
            "the SFT recipe's max_length (prompt + target tokens): the card counts the instances over it, which TRL "
            "truncates (the paper: 8192)"
        ),
    )
    output_dir: str = field(default="runs/train_data/sft", metadata=h("where sft.jsonl and the data card go"))

    _SECTIONS = {**PairsConfig._SECTIONS, "teacher": LLMConfig, "teacher_sampling": Sampling}

    def __post_init__(self):
        super().__post_init__()
        self._need(
            self.teacher in GOLD_TEACHERS or isinstance(self.teacher, LLMConfig),
            "teacher",
            "is required: an LLM config (backend, model, ...), 'gold' (gold-label teacher), 'gold-trace' "
            "(gold labels with a message-by-message think trace) or 'gold-trace-numbered'",
        )
        self._need(isinstance(self.teacher_sampling, Sampling), "teacher_sampling", "must be a Sampling")
        self._need(_is_int(self.batch_questions) and self.batch_questions >= 1, "batch_questions", "must be >= 1")
        self._need(isinstance(self.balance, bool), "balance", "must be true or false")
        self._need(isinstance(self.teacher_reasoning, bool), "teacher_reasoning", "must be true or false")
        self._need(_is_int(self.max_length) and self.max_length >= 1, "max_length", "must be an integer >= 1")
        self._need(self.teacher_keep in KEEP_STYLES, "teacher_keep", f"must be one of {', '.join(KEEP_STYLES)}")
        self._need(
            self.teacher_keep == "verbatim" or self.gold,
            "teacher_keep",
            f"{self.teacher_keep} is the gold-label teacher's (a model teacher writes its own KEEP content)",
        )

    def to_dict(self) -> dict:
        d = super().to_dict()
        if d.get("teacher_keep") == "verbatim":  # unset: cards and fingerprints of earlier data stay as they were
            d.pop("teacher_keep")
        if d.get("max_length") == 2048:  # likewise
            d.pop("max_length")
        return d

    @property
    def teacher_name(self) -> str:
        from lazymem.train.teacher import GOLD_TEACHER

        spans = {
            "key_span": " and key-span KEEPs",
            "content": " and content-adapter KEEPs (key-span gold, lexical non-gold cut to a sentence)",
        }.get(self.teacher_keep, "")
        if self.teacher == GOLD_TRACE:
            return GOLD_TEACHER + " with a message trace" + spans
        if self.teacher == GOLD_TRACE_NUMBERED:
            return GOLD_TEACHER + " with a message trace and numbered reasons" + spans
        return GOLD_TEACHER + spans if self.teacher == "gold" else f"{self.teacher.backend}:{self.teacher.model}"

    @property
    def gold(self) -> bool:
        """The offline gold-label teacher (with or without its trace): no model is called."""
        return isinstance(self.teacher, str)


TRACE_TEACHERS = (GOLD_TRACE, GOLD_TRACE_NUMBERED)


def balance_windows(n_keep: Sequence[int], seed: int = 0) -> list[int]:
    """Indices of a window-balanced set, ascending: every window with a KEEP, and as many all-DROP
    windows drawn without replacement by ``random.Random(seed)`` (all of them when fewer).

    >>> balance_windows([0, 2, 0, 0, 1, 0], seed=0)
    [1, 2, 4, 5]
    """
    keep = [i for i, n in enumerate(n_keep) if n > 0]
    drop = [i for i, n in enumerate(n_keep) if n == 0]
    return sorted(keep + random.Random(seed).sample(drop, min(len(keep), len(drop))))


def build_sft_data(config: SFTDataConfig, client: LLMClient | None = None) -> dict:
    """Build SFT data into ``config.output_dir`` (see the module docstring); returns the data card.

    ``client`` is a ready teacher client (e.g. a scripted fake); None makes one from
    ``config.teacher`` (unused with the gold-label teacher).

    Writes ``sft.jsonl`` (the instances), ``annotations.jsonl`` (every query-window pair with
    the teacher's raw output and verdict), ``card.json`` and ``card.md``. Rerunning rewrites
    the same files; with ``teacher.cache_dir`` set, teacher calls already made come from disk.
    """
    from lazymem.train.datacard import sft_card, write_card, write_jsonl
    from lazymem.train.teacher import annotate

    datasets, sources = load_sources(config)
    selected, selection = select_questions(datasets, config)
    if config.gold and client is not None:
        raise ConfigError(f"build_sft_data: a teacher client was given but config.teacher is {config.teacher!r}")
    if not config.gold and client is None:
        from lazymem.llm import make_client

        client = make_client(config.teacher)
    done: list = []  # (pair, completion, annotation) per query-window pair
    batch: list[QueryWindow] = []

    def flush():
        done.extend(
            (pair, *r)
            for pair, r in zip(
                batch,
                annotate(
                    [b.prompt for b in batch],
                    [b.history for b in batch],
                    client,
                    config.teacher_sampling,
                    trace=config.teacher in TRACE_TEACHERS,
                    numbered=config.teacher == GOLD_TRACE_NUMBERED,
                    keep_reasoning=config.teacher_reasoning,
                    questions=[b.question for b in batch],
                    keep=config.teacher_keep,
                ),
            )
        )
        batch.clear()

    for n, pairs in enumerate(query_window_pairs(datasets, selected, config, desc="sft data"), start=1):
        batch += pairs
        if n % config.batch_questions == 0:
            flush()
    flush()
    selection["gold_messages_in_windows"] = gold_in_windows(pair for pair, _, _ in done)
    selection["query_window_pairs_by_shape"] = dict(
        sorted(Counter("w={},L={},s={}".format(*pair.shape) for pair, _, _ in done).items())
    )
    ok = [(pair, ann) for pair, _, ann in done if ann.ok]
    # content targets KEEP non-gold too: balance on the gold, so the windows are the gold teacher's own
    weight = [sum(pair.prompt.gold_labels) if config.teacher_keep == "content" else a.n_keep for pair, a in ok]
    chosen = balance_windows(weight, config.seed) if config.balance else list(range(len(ok)))
    rows = [
        {
            "prompt": list(ok[i][0].prompt.messages),
            "completion": [{"role": "assistant", "content": ok[i][1].target}],
            **pair_columns(ok[i][0]),
            "n_keep": ok[i][1].n_keep,
            "has_think": ok[i][1].has_think,
        }
        for i in chosen
    ]
    out = config.output_dir
    files = {
        "sft": write_jsonl(f"{out}/sft.jsonl", rows),
        "annotations": write_jsonl(
            f"{out}/annotations.jsonl",
            (
                {
                    **pair_columns(pair),
                    "status": ann.status,
                    "detail": ann.detail,
                    "n_keep": ann.n_keep,
                    "n_decisions": ann.n_decisions,
                    "has_think": ann.has_think,
                    "model": c.model,
                    "error": c.error,
                    "finish_reason": c.finish_reason,
                    "output": c.text,
                    "reasoning": c.reasoning,
                }
                for pair, c, ann in done
            ),
        ),
    }
    card, markdown = sft_card(
        config,
        sources,
        selection,
        [(pair.prompt, ann) for pair, _, ann in done],
        rows,
        files,
        max_length=config.max_length,
    )
    write_card(out, card, markdown)
    return card
