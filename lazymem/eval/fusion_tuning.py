"""Tune how the BM25 and dense lists are fused, choosing on development questions only.

For each question the BM25 list and the dense list are computed once, over the whole history,
by the real ``Retriever`` (``Retriever.ranked_lists``; message embeddings come from the disk
cache). Each setting of a small grid (RRF k, (sparse, dense) weights, per-list depth) is then
scored in pure Python with the project's All@k (``metrics.all_covered``) at radii w: a list cut
at depth d is the first d items of the whole list, so this equals what ``Retriever.search``
would pool (``--verify`` checks it on the report set). The setting with the most covered
(question, w) pairs, i.e. the best mean All@k over the radii, on the DEVELOPMENT questions is
chosen (ties: the first in grid order). The report set is only scored: BM25 alone, dense alone,
the old fusion (``RetrievalConfig``'s defaults) and the chosen one.

LoCoMo: the spec's ``#paper`` subset (conv-49 and conv-50, categories 1-4) is the report set and
the other eight conversations, same categories, are the development set::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 nice -n 10 .venv/bin/lazymem fusion-tuning \\
        ../shared/data/locomo/locomo10.json#paper --sparse rank_bm25 --verify --out runs/fusion_tuning/locomo.json

(docs/results/fusion_tuning_locomo.json is that run, made when rank_bm25 was the default sparse
engine; bm25s, today's default, ranks the same but for terms in most of a history's messages.)

Any other source names its report histories: ``SPEC --report-histories h1,h2``.

>>> fused_top([1, 2, 3], [3, 4], FusionSetting(rrf_k=0, weights=(1, 0)), k=2)
[1, 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lazymem.errors import int_in, path_text
from lazymem.eval.metrics import all_at_k, all_covered, coverage_table
from lazymem.records import Dataset
from lazymem.retrieve import RetrievalConfig, Retriever, WindowConfig, reciprocal_rank_fusion, session_starts

GRID_RRF_K = (10, 30, 60)
GRID_WEIGHTS = ((1, 1), (2, 1), (3, 1), (1, 2))  # (sparse, dense)
GRID_DEPTHS = (50, 100, None)  # each list's depth; None = whole history


@dataclass(frozen=True)
class FusionSetting:
    """One way to fuse the two lists: RRF constant, (sparse, dense) weights, each list's depth."""

    rrf_k: float = 60  # k in w / (k + rank)
    weights: tuple[float, float] = (1, 1)  # (sparse, dense); 0 leaves that list out
    sparse_depth: int | None = 100  # BM25 list length before fusion; None = whole history
    dense_depth: int | None = 100  # dense list length before fusion; None = whole history

    @classmethod
    def from_config(cls, c: RetrievalConfig) -> FusionSetting:
        """The fusion a RetrievalConfig performs.

        >>> FusionSetting.from_config(RetrievalConfig(rrf_weights=(2, 1), dense_depth=50)).label
        'k=60 w=2:1 depth=100/50'
        """
        return cls(c.rrf_k, tuple(c.rrf_weights or (1, 1)), *c.list_depths())

    @property
    def label(self) -> str:
        def num(x):
            return "all" if x is None else f"{x:g}"

        return (
            f"k={num(self.rrf_k)} w={num(self.weights[0])}:{num(self.weights[1])} "
            f"depth={num(self.sparse_depth)}/{num(self.dense_depth)}"
        )

    def retrieval_fields(self) -> dict:
        """The RetrievalConfig fields that make ``Retriever`` fuse this way.

        >>> FusionSetting(30, (2, 1), 100, None).retrieval_fields()
        {'rrf_k': 30, 'rrf_weights': [2, 1], 'depth': None, 'sparse_depth': 100, 'dense_depth': None}
        """
        same = self.sparse_depth == self.dense_depth
        return {
            "rrf_k": self.rrf_k,
            "rrf_weights": None if tuple(self.weights) == (1, 1) else list(self.weights),
            "depth": self.sparse_depth if same else None,
            "sparse_depth": None if same else self.sparse_depth,
            "dense_depth": None if same else self.dense_depth,
        }


@dataclass(frozen=True)
class Case:
    """One question with gold evidence: its two whole ranked lists and where its windows may go."""

    qid: str  # question id
    sparse: tuple[int, ...]  # BM25 list over the whole history (positive scores only), best first
    dense: tuple[int, ...]  # dense list over the whole history, best first
    gold: tuple[int, ...]  # gold evidence positions
    n_messages: int  # history length
    boundaries: tuple[int, ...] | None = None  # session starts (only when windows stay inside sessions)


def grid(
    rrf_ks: Sequence[float] = GRID_RRF_K,
    weights: Sequence[tuple] = GRID_WEIGHTS,
    depths: Sequence[int | None] = GRID_DEPTHS,
) -> list[FusionSetting]:
    """Every combination, each list's depth chosen independently.

    >>> len(grid()), grid()[0].label
    (108, 'k=10 w=1:1 depth=50/50')
    """
    return [FusionSetting(k, tuple(w), sd, dd) for k, w, sd, dd in itertools.product(rrf_ks, weights, depths, depths)]


def fused_top(sparse: Sequence[int], dense: Sequence[int], setting: FusionSetting, k: int) -> list[int]:
    """The top-k pool positions of the fused lists, as ``Retriever.search`` would order them."""
    lists = [list(sparse[: setting.sparse_depth]), list(dense[: setting.dense_depth])]
    return [p for p, _ in reciprocal_rank_fusion(lists, k=setting.rrf_k, weights=setting.weights)[:k]]


def split_dev_report(
    full: Dataset,
    report_histories: Sequence[str],
    types: Sequence[str] | None = None,
) -> tuple[Dataset, Dataset]:
    """(development, report): questions over the report histories vs all others, of `types` if given."""
    report_ids = set(report_histories)
    missing = report_ids - set(full.histories)
    if missing:
        raise ValueError(f"report histories not in {full.name}: {sorted(missing)}")
    keep = [q for q in full.questions if types is None or q.type in types]
    dev = [q for q in keep if q.history_id not in report_ids]
    report = [q for q in keep if q.history_id in report_ids]
    if not dev or not report:
        raise ValueError(f"{full.name}: {len(dev)} development and {len(report)} report questions; both must be > 0")
    return full.subset(dev, name=f"{full.name}-dev"), full.subset(report, name=f"{full.name}-report")


def load_split(spec: str, report_histories: Sequence[str] = ()) -> tuple[Dataset, Dataset]:
    """Development and report sets: ``SPEC#subset`` reports on that subset and develops on the
    rest of the source (the subset's question types only); else ``report_histories`` are named."""
    from lazymem.data import load_dataset

    if report_histories:
        return split_dev_report(load_dataset(spec), report_histories)
    if "#" not in spec or Path(spec).exists():
        raise ValueError("name the report set: a SPEC#subset (e.g. locomo10.json#paper) or --report-histories")
    report = load_dataset(spec)
    dev, _ = split_dev_report(
        load_dataset(spec.rpartition("#")[0]), list(report.histories), sorted({q.type for q in report.questions})
    )
    return dev, report


def build_cases(dataset: Dataset, retriever: Retriever, window: WindowConfig, progress: bool = False) -> list[Case]:
    """A Case per question with gold evidence (abstentions and evidence-free questions count in no All@k)."""
    from tqdm.auto import tqdm

    cases = []
    qs = sorted(dataset.questions, key=lambda q: q.history_id)  # each history indexed once
    for q in tqdm(qs, desc=f"lists {dataset.name}", unit="q", disable=not progress):
        if q.abstention or not q.evidence:
            continue
        history = dataset.history(q)
        sparse, dense = retriever.ranked_lists(retriever.index(history), q.text, depths=(None, None))
        if sparse is None or dense is None:
            raise ValueError("fusion tuning needs both lists: set sparse and dense_model")
        bounds = None if window.cross_sessions else tuple(session_starts(history))
        cases.append(
            Case(q.id, tuple(p for p, _ in sparse), tuple(p for p, _ in dense), tuple(q.evidence), len(history), bounds)
        )
    return cases


def coverage(
    setting: FusionSetting,
    cases: Sequence[Case],
    k: int = 50,
    radii: Sequence[int] = (0, 1, 2, 3),
    window: WindowConfig | None = None,
) -> dict:
    """All@k per radius (keys str(w)) of one setting over the cases, their mean, and covered pairs."""
    window = window or WindowConfig()
    hit = {w: [] for w in radii}
    for c in cases:
        top = fused_top(c.sparse, c.dense, setting, k)
        for w in radii:
            hit[w].append(
                all_covered(top, c.gold, k, w, c.n_messages, window.L, window.s, window.cross_sessions, c.boundaries)
            )
    at = {str(w): all_at_k(v) for w, v in hit.items()}
    vals = [v for v in at.values() if v is not None]
    return {
        "all_at_k": at,
        "mean": sum(vals) / len(vals) if vals else None,
        "covered": sum(sum(v) for v in hit.values()),
        "n": len(cases),
    }


def choose_setting(
    settings: Sequence[FusionSetting], dev_cases: Sequence[Case], k: int, radii: Sequence[int], window: WindowConfig
) -> tuple[FusionSetting, list[dict]]:
    """The setting covering the most (question, w) pairs of the DEVELOPMENT cases, and every row."""
    rows = [{"setting": s, **coverage(s, dev_cases, k, radii, window)} for s in settings]
    best = max(range(len(rows)), key=lambda i: (rows[i]["covered"], -i))  # ties: first in grid order
    return rows[best]["setting"], rows


def tune(
    dev: Dataset,
    report: Dataset,
    config: RetrievalConfig | None = None,
    settings: Sequence[FusionSetting] | None = None,
    k: int = 50,
    radii: Sequence[int] = (0, 1, 2, 3),
    window: WindowConfig | None = None,
    retriever: Retriever | None = None,
    verify: bool = False,
    progress: bool = False,
) -> dict:
    """Choose a fusion on `dev`, score it and the baselines on `report`; a JSON-ready record with seconds.

    ``config`` gives the lists (sparse backend, dense model, BM25 settings) and the old fusion
    (its rrf_k, weights and depths); ``verify`` reruns the real retriever with the chosen
    fusion on the report set and compares its All@k with the cheap one.
    """
    from lazymem.runinfo import git_commit, now

    config = config or RetrievalConfig()
    window = window or WindowConfig()
    settings = list(settings if settings is not None else grid())
    radii = [int(w) for w in radii]
    if k > config.n:
        raise ValueError(f"k={k} is larger than the pool size n={config.n}")
    t_start = time.perf_counter()
    seconds: dict[str, float] = {}
    retriever = retriever or Retriever(config)
    cases = {}
    for name, ds in (("dev", dev), ("report", report)):
        t0 = time.perf_counter()
        cases[name] = build_cases(ds, retriever, window, progress)
        seconds[f"lists_{name}"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    chosen, rows = choose_setting(settings, cases["dev"], k, radii, window)
    seconds["grid_dev"] = time.perf_counter() - t0
    old = FusionSetting.from_config(config)
    named = {
        "bm25": dataclasses.replace(old, weights=(1, 0)),
        "dense": dataclasses.replace(old, weights=(0, 1)),
        "old_fusion": old,
        "chosen": chosen,
    }
    t0 = time.perf_counter()
    table = {
        name: {
            "setting": dataclasses.asdict(s),
            "label": s.label,
            **{part: coverage(s, cases[part], k, radii, window) for part in ("dev", "report")},
        }
        for name, s in named.items()
    }
    seconds["score_rows"] = time.perf_counter() - t0
    out = {
        "time": now(),
        "git_commit": git_commit(),
        "k": k,
        "radii": radii,
        "window": {"L": window.L, "s": window.s, "cross_sessions": window.cross_sessions},
        "retrieval": config.as_dict(),
        "sets": {
            part: {
                "name": ds.name,
                "source": ds.source,
                "sha256": ds.sha256,
                "histories": sorted(ds.histories),
                "questions": len(ds.questions),
                "with_evidence": len(cases[part]),
            }
            for part, ds in (("dev", dev), ("report", report))
        },
        "chosen": {
            "label": chosen.label,
            "setting": dataclasses.asdict(chosen),
            "retrieval_fields": chosen.retrieval_fields(),
        },
        "table": table,
        "grid_dev": sorted(
            (
                {
                    "label": r["setting"].label,
                    "setting": dataclasses.asdict(r["setting"]),
                    **{key: r[key] for key in ("all_at_k", "mean", "covered")},
                }
                for r in rows
            ),
            key=lambda r: -r["covered"],
        ),
    }
    if verify:
        t0 = time.perf_counter()
        cfg = dataclasses.replace(config, **chosen.retrieval_fields())
        pools = Retriever(cfg, cache=retriever.cache, encoder=retriever.encoder).retrieve  # same model, loaded once
        real = coverage_table(
            {q.id: pools(report.history(q), q.text).positions for q in report.questions},
            report,
            k=k,
            radii=radii,
            ks=(k,),
            config=window,
        )["all_at_k"]
        out["verify"] = {
            "config": cfg.as_dict(),
            "all_at_k": real,
            "matches": real == table["chosen"]["report"]["all_at_k"],
        }
        seconds["verify"] = time.perf_counter() - t0
    seconds["total"] = time.perf_counter() - t_start
    out["seconds"] = {key: round(v, 2) for key, v in seconds.items()}
    return out


def summary_text(out: dict) -> str:
    """The readable table: All@k per radius on the report set, then the dev numbers that chose."""
    radii, k = out["radii"], out["k"]
    head = f"{'':12}{'fusion':28}" + "".join(f"{'w=' + str(w):>7}" for w in radii) + f"{'mean':>7}"
    lines = []
    for part in ("report", "dev"):
        s = out["sets"][part]
        lines += [
            f"{part}: {s['name']} ({', '.join(s['histories'])}), {s['with_evidence']} questions with evidence, All@{k}",
            head,
        ]
        for name, row in out["table"].items():
            r = row[part]
            lines.append(f"{name:12}{row['label']:28}" + _cells(r, radii))
        lines.append("")
    lines.append(
        f"chosen on dev ({len(out['grid_dev'])} settings): {out['chosen']['label']}; "
        f"RetrievalConfig fields {out['chosen']['retrieval_fields']}"
    )
    lines += [f"  top {i}: {r['label']:28}" + _cells(r, radii) for i, r in enumerate(out["grid_dev"][:5], start=1)]
    if "verify" in out:
        lines.append(
            f"verify (real Retriever, report set): {out['verify']['all_at_k']} "
            f"{'matches' if out['verify']['matches'] else 'DIFFERS'}"
        )
    lines.append("seconds: " + ", ".join(f"{key} {v}" for key, v in out["seconds"].items()))
    return "\n".join(lines)


def _cells(row: dict, radii: Sequence[int]) -> str:
    vals = [row["all_at_k"][str(w)] for w in radii] + [row["mean"]]
    return "".join("      -" if v is None else f"{v:7.3f}" for v in vals)


def _num(text: str) -> float:
    x = float(text)
    return int(x) if x.is_integer() else x


def list_type(name: str, item, most: int = 64):
    """An argparse ``type=`` for a comma-separated list of 1..`most` items, each read by ``item`` (which raises
    ValueError on a bad one): checked when the command line is parsed, so a bad grid exits 2 naming the flag.

    >>> list_type("RRF k values in (0, 1e9)", _positive)("10, 30")
    [10, 30]
    >>> list_type("RRF k values in (0, 1e9)", _positive)("10,-1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be comma-separated RRF k values in (0, 1e9) (at most 64), got '10,-1'
    """

    def parse(text: str) -> list:
        parts = [x.strip() for x in str(text).split(",") if x.strip()]
        try:
            values = [item(x) for x in parts]
        except (ValueError, OverflowError):
            values = []
        if not 1 <= len(values) <= most:
            raise argparse.ArgumentTypeError(f"must be comma-separated {name} (at most {most}), got {str(text)[:80]!r}")
        return values

    parse.__name__ = name
    return parse


def _positive(text: str) -> float:
    """A number > 0 (an RRF k or a list weight), finite and short."""
    if len(text) > 20:
        raise ValueError(text)
    x = _num(text)
    if not (0 < x < 1e9):
        raise ValueError(text)
    return x


def _weights(text: str) -> tuple:
    """``sparse:dense``, each a number > 0."""
    parts = text.split(":")
    if len(parts) != 2:
        raise ValueError(text)
    return tuple(_positive(x.strip()) for x in parts)


def _depth(text: str) -> int | None:
    """A per-list depth in 1..1,000,000, or none/all (the whole history)."""
    if text.lower() in ("none", "all"):
        return None
    if len(text) > 8 or not text.isdigit() or not 1 <= int(text) <= 1_000_000:
        raise ValueError(text)
    return int(text)


def _radius(text: str) -> int:
    """A window radius in 0..50."""
    if len(text) > 3 or not text.isdigit() or int(text) > 50:
        raise ValueError(text)
    return int(text)


def add_arguments(ap: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``lazymem fusion-tuning``'s arguments."""
    ap.add_argument("spec", help="dataset SPEC; SPEC#subset makes the subset the report set")
    ap.add_argument("--report-histories", default="", help="comma-separated history ids of the report set")
    ap.add_argument("--sparse", default=RetrievalConfig.sparse, help="BM25 backend (rank_bm25, bm25s)")
    ap.add_argument("--dense-model", default=RetrievalConfig.dense_model)
    ap.add_argument("--k", type=int_in(1, 100_000), default=50, help="All@k cut-off (the pool size)")
    ap.add_argument("--w", type=list_type("radii in 0..50", _radius), default="0,1,2,3", help="radii")
    ap.add_argument("--L", type=int_in(1, 1000), default=8, help="max sub-window length")
    ap.add_argument("--s", type=int_in(1, 1000), default=7, help="sub-window stride")
    ap.add_argument(
        "--rrf-k", type=list_type("RRF k values in (0, 1e9)", _positive), default=",".join(map(str, GRID_RRF_K))
    )
    ap.add_argument(
        "--weights",
        type=list_type("sparse:dense weight pairs, each in (0, 1e9)", _weights),
        default=",".join(f"{a}:{b}" for a, b in GRID_WEIGHTS),
        help="sparse:dense,...",
    )
    ap.add_argument(
        "--depths",
        type=list_type("depths in 1..1000000 or none", _depth),
        default="50,100,none",
        help="per-list depths; none = whole history",
    )
    ap.add_argument(
        "--verify", action="store_true", help="rerun the real Retriever with the chosen fusion on the report set"
    )
    ap.add_argument("--out", type=path_text, help="write the JSON record here")
    ap.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    return ap


def run_from_args(args: argparse.Namespace, argv: Sequence[str] | None = None) -> int:
    """Tune on the development histories, report on the report set (module docstring)."""
    dev, report = load_split(args.spec, [h for h in args.report_histories.split(",") if h])
    settings = grid(
        args.rrf_k,
        args.weights,
        args.depths,
    )
    config = RetrievalConfig(n=args.k, sparse=args.sparse, dense_model=args.dense_model)
    out = tune(
        dev,
        report,
        config,
        settings,
        k=args.k,
        radii=args.w,
        window=WindowConfig(L=args.L, s=args.s),
        verify=args.verify,
        progress=not args.json,
    )
    out["command"] = ["lazymem", "fusion-tuning", *(argv if argv is not None else sys.argv[1:])]
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=1) if args.json else summary_text(out))
    return 0
