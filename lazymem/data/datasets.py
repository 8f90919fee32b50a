"""One entry point for every data source: `load_dataset(SPEC)`, and `summarize(dataset)`.

SPEC is one of
- a path to a LongMemEval JSON (s, m, oracle, cleaned re-release) or to LoCoMo's
  ``locomo10.json``; the format is detected from the file, or forced with a
  ``longmemeval:`` / ``locomo:`` prefix; a ``#subset`` suffix picks a named subset
  (``locomo10.json#paper`` = the paper's 314 LoCoMo test questions); a LoCoMo spec may end in
  ``?errata=PATH`` (``locomo10.json#paper?errata=locomo10_audit_errata.json``): the questions carry
  the errata's audit status, corrected evidence and answer (``lazymem.data.locomo``);
- ``synthetic`` or ``synthetic:messages=1000,seed=0,histories=1,questions=12``: the
  embedded generator (offline, deterministic);
- ``synthetic-casual:conversations=8,sessions=12,seed=1,questions=20``: casual two-person
  conversations in the LoCoMo schema (``lazymem.data.casual``), loaded by the LoCoMo parser;
- a public LongMemEval name (``longmemeval_s``, ``longmemeval_oracle_cleaned``, ...),
  fetched from the hub when online.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from lazymem.errors import ConfigError, LoadError
from lazymem.records import Dataset, type_abbrev

DEFAULT_SPEC = "synthetic:messages=400,seed=0,histories=4,questions=12"


def _sniff(path: Path) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(65536)
    except UnicodeDecodeError as e:
        raise LoadError(str(path), None, None, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    if '"question_id"' in head or '"haystack_sessions"' in head:
        return "longmemeval"
    if '"sample_id"' in head or '"qa"' in head or '"conversation"' in head and '"speaker_a"' in head:
        return "locomo"
    if '"conversation"' in head:  # third-party reformatted LongMemEval: the loader explains the rejection
        return "longmemeval"
    raise LoadError(
        str(path),
        None,
        None,
        "neither LongMemEval (question_id, haystack_sessions) nor LoCoMo "
        "(sample_id, conversation, qa) records were found in the first 64 KiB",
    )


def split_options(spec: str) -> tuple[str, dict[str, str]]:
    """A SPEC without its ``?key=value[&key=value]`` options, and the options (the only key: ``errata``).

    >>> split_options("data/locomo10.json#paper?errata=data/errata.json")
    ('data/locomo10.json#paper', {'errata': 'data/errata.json'})
    >>> split_options("synthetic:messages=60")
    ('synthetic:messages=60', {})
    """
    spec = str(spec)
    if "?" not in spec or Path(spec).exists():
        return spec, {}
    spec, _, tail = spec.rpartition("?")
    options: dict[str, str] = {}
    for part in tail.split("&"):
        key, eq, value = part.partition("=")
        if key != "errata" or not eq or not value:
            raise ConfigError(f"dataset spec option {part!r}: the one option is errata=PATH (a LoCoMo errata file)")
        options[key] = value
    return spec, options


def load_dataset(spec: str, subset: str | None = None) -> Dataset:
    """Load a dataset from a SPEC string (see the module docstring).

    >>> load_dataset("synthetic:messages=60,seed=1,histories=1,questions=6").name
    'synthetic:messages=60,seed=1,histories=1,questions=6'
    """
    spec, options = split_options(spec)
    kind = None
    for prefix in ("longmemeval:", "locomo:"):
        if spec.startswith(prefix):
            kind, spec = prefix[:-1], spec[len(prefix) :]
    if "#" in spec and not Path(spec).exists():
        spec, _, sub = spec.rpartition("#")
        if subset and subset != sub:
            raise ConfigError(f"two subsets given: #{sub} in the spec and {subset!r}")
        subset = sub
    if options and (spec.startswith("synthetic") or spec == "synthetic"):
        raise ConfigError(f"errata apply to LoCoMo data only, not to {spec!r}")
    if kind is None and (spec == "synthetic-casual" or spec.startswith("synthetic-casual:")):
        from lazymem.data.casual import casual_dataset, parse_casual_spec

        if subset:
            raise ConfigError("the casual generator has no named subsets")
        return casual_dataset(**parse_casual_spec(spec))
    if kind is None and (spec == "synthetic" or spec.startswith("synthetic:")):
        from lazymem.data.synthetic import parse_spec, synthetic_dataset

        if subset:
            raise ConfigError("the synthetic generator has no named subsets")
        return synthetic_dataset(**parse_spec(spec))
    path = Path(spec).expanduser()
    if path.exists():
        kind = kind or _sniff(path)
    elif kind is None and path.suffix != ".json" and "/" not in spec:
        kind = "longmemeval"  # a public dataset name, e.g. longmemeval_s
    else:
        raise FileNotFoundError(
            f"no dataset file at {spec!r} (and it is not 'synthetic[:...]' or a public LongMemEval name)"
        )
    if kind == "locomo":
        from lazymem.data.locomo import load_locomo

        return load_locomo(path, subset=subset, errata=options.get("errata"))
    if options:
        raise ConfigError(f"errata apply to LoCoMo data only, not to {spec!r}")
    from lazymem.data.longmemeval import load_longmemeval

    if subset:
        raise ConfigError(
            f"LongMemEval has no named subsets (got {subset!r}); use `lazymem data split` for the paper's split"
        )
    return load_longmemeval(path if path.exists() else spec)


def summarize(dataset: Dataset) -> dict:
    """JSON-ready counts: questions by type, messages, sessions and gold evidence."""
    qs = dataset.questions
    by_type = Counter(q.type for q in qs)
    # LoCoMo in category order (1 multi-hop ... 5 adversarial), other types by name
    cat = {q.type: q.category for q in qs if q.category is not None}
    order = sorted(by_type, key=lambda t: (cat.get(t, 0), t))
    lengths = [len(h) for h in dataset.histories.values()]
    sessions = sum(len(h.session_ids) for h in dataset.histories.values())
    n_ev = [len(q.evidence) for q in qs]
    multi_session = 0
    for q in qs:
        if q.evidence:
            h = dataset.histories[q.history_id]
            multi_session += len({h[p].session_id for p in q.evidence}) > 1
    gold_messages = sum(1 for h in dataset.histories.values() for m in h if m.gold_for)
    return {
        "name": dataset.name,
        "source": dataset.source,
        "sha256": dataset.sha256,
        "questions": len(qs),
        "questions_by_type": {t: by_type[t] for t in order},
        "questions_by_abbrev": {type_abbrev(t): by_type[t] for t in order},
        **({"questions_by_category": {str(cat[t]): by_type[t] for t in order}} if cat else {}),
        "abstention_questions": sum(q.abstention for q in qs),
        "histories": len(dataset.histories),
        **({"questions_by_history": dict(Counter(q.history_id for q in qs))} if len(dataset.histories) <= 20 else {}),
        "sessions": sessions,
        "messages": sum(lengths),
        "messages_per_history": {
            "min": min(lengths, default=0),
            "median": statistics.median(lengths) if lengths else 0,
            "max": max(lengths, default=0),
        },
        "gold_evidence": {
            "questions_with_evidence": sum(1 for n in n_ev if n),
            "evidence_refs": sum(n_ev),
            "mean_per_question": round(sum(n_ev) / len(qs), 3) if qs else 0.0,
            "questions_spanning_sessions": multi_session,
            "gold_messages": gold_messages,
        },
        **({"errata": errata_counts(dataset)} if dataset.errata_sha256 else {}),
        "load_issues": len(dataset.issues),
        "load_issue_examples": [
            f"{i.file}: {i.record}, {i.field}: {i.problem} -> {i.action}" for i in dataset.issues[:10]
        ],
    }


def errata_counts(dataset: Dataset) -> dict:
    """The errata file applied (``?errata=PATH``) and the questions by audit status."""
    audits = Counter(q.audit for q in dataset.questions)
    return {
        "source": dataset.errata_source,
        "sha256": dataset.errata_sha256,
        "flagged": sum(n for a, n in audits.items() if a not in ("clean", "unaudited")),
        "wrong_answer": sum(q.answer_is_wrong for q in dataset.questions),
        "by_audit": dict(sorted(audits.items())),
    }


def summary_text(s: dict) -> str:
    """The human-readable form of ``summarize``'s counts (what `lazymem data summary` prints)."""
    lines = [
        f"dataset   {s['name']}",
        f"source    {s['source']}",
        f"sha256    {s['sha256'][:16]}...",
        f"histories {s['histories']}   sessions {s['sessions']}   messages {s['messages']}  "
        f"(per history min {s['messages_per_history']['min']}, median {s['messages_per_history']['median']}, "
        f"max {s['messages_per_history']['max']})",
        f"questions {s['questions']}   abstention {s['abstention_questions']}"
        + (f"   by history {s['questions_by_history']}" if "questions_by_history" in s else ""),
    ]
    width = max((len(t) for t in s["questions_by_type"]), default=4)
    for t, n in s["questions_by_type"].items():
        lines.append(f"  {t:<{width}}  {n:>6}")
    g = s["gold_evidence"]
    lines.append(
        f"gold evidence: {g['evidence_refs']} refs over {g['questions_with_evidence']} questions "
        f"(mean {g['mean_per_question']}), {g['questions_spanning_sessions']} questions span sessions, "
        f"{g['gold_messages']} distinct gold messages"
    )
    if "errata" in s:
        e = s["errata"]
        lines.append(
            f"errata {e['source']}: {e['flagged']} questions flagged, {e['wrong_answer']} with a wrong answer "
            f"({', '.join(f'{a} {n}' for a, n in e['by_audit'].items())})"
        )
    if s["load_issues"]:
        lines.append(f"load issues: {s['load_issues']} (repaired or dropped, see --json)")
    return "\n".join(lines)


STYLES = ("synthetic", "synthetic-long", "casual", "locomo", "longmemeval")


def spec_style(spec: str) -> str:
    """The style of a dataset SPEC, as data cards count it: one of ``STYLES``.

    >>> [spec_style(s) for s in ("synthetic:messages=60,varied=1", "synthetic:messages=60,long=1",
    ...                          "synthetic-casual:seed=1", "x/locomo10.json", "longmemeval_s")]
    ['synthetic', 'synthetic-long', 'casual', 'locomo', 'longmemeval']
    """
    spec = split_options(spec)[0]
    if spec == "synthetic-casual" or spec.startswith("synthetic-casual:"):
        return "casual"
    if spec == "synthetic" or spec.startswith("synthetic:"):
        from lazymem.data.synthetic import parse_spec

        return "synthetic-long" if parse_spec(spec).get("long") else "synthetic"
    if spec.startswith("locomo:") or "locomo" in Path(spec.split("#")[0]).name.lower():
        return "locomo"
    return "longmemeval"


def available_specs(specs: Iterable[str]) -> list[str]:
    """The specs that can load here, in order without repeats: synthetic specs always, files when present.

    >>> available_specs(["synthetic:messages=50,seed=0", "/no/such.json#paper", "synthetic:messages=50,seed=0"])
    ['synthetic:messages=50,seed=0']
    """
    return [
        s for s in dict.fromkeys(specs) if s.startswith("synthetic") or Path(split_options(s)[0].split("#")[0]).exists()
    ]


def evidence_profile(dataset: Dataset) -> dict[str, list]:
    """Where the gold evidence sits: per-history lengths, evidence count per question, and each
    evidence message's relative position in its history (0 = first message, 1 = last)."""
    return {
        "history_lengths": {h.id: len(h) for h in dataset.histories.values()},
        "evidence_per_question": [len(q.evidence) for q in dataset.questions],
        "evidence_relpos": [p / max(len(dataset.history(q)) - 1, 1) for q in dataset.questions for p in q.evidence],
    }
