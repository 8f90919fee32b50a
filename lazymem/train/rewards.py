"""The GRPO reward of the memory-processing model (paper Eq. reward and action_reward), for TRL.

R(o; p) = I[o in V] ((1 - lam) R_act + lam R_qual): the strict format gate (any violation
gives 0), the action reward R_act = eta A_g + (1 - eta) A_n (gold retention and non-gold
rejection, each an accuracy within its category) and the judged quality reward R_qual
(``lazymem.train.quality``). ``LazyMemReward`` is the whole thing as a TRL reward function.

Two format numbers are reported and kept apart wherever format matters:
``strict_gate`` (GateVerdict.ok, the reward's I[o in V]) and ``gate_fmt`` (GateVerdict.fmt_ok,
the paper's looser "Gate Fmt." column: a parseable array with one decision per message).

>>> raw = ('[{"op": "KEEP", "compressed_content": "Moved to Lisbon.", "reason": ""},'
...        ' {"op": "KEEP", "compressed_content": "Likes tea.", "reason": ""}]')
>>> v = format_gate(raw, [4, 7])
>>> r_act = action_reward(v.decisions, [True, False])  # gold kept, non-gold kept
>>> round(r_act, 3), composite_reward(v.ok, r_act, None, lam=0.0) == r_act
(0.915, True)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from lazymem.construct.gate import Decision, GateVerdict, parse_decisions, strip_think
from lazymem.errors import ConfigError
from lazymem.records import Message
from lazymem.train.quality import KeptMessage, QualityJudge

# Paper, Appendix "Reward-Mixture and Curriculum Hyperparameters" (Table tab:reward_hyper).
ETA = 0.915  # gold-retention weight of R_act
LAMBDA_PHASE1 = 0.0  # quality weight before the switch: gate + action reward only, no judge calls
LAMBDA_PHASE2 = 0.5  # quality weight after it
TAU = 0.99  # validation format-validity rate that must be exceeded to switch
QUALITY_COLUMNS = ("query", "query_time", "gold_answer", "reasoning_chain", "sources")


def completion_text(completion: Any) -> str:
    """The policy's output text: a string as is, or a conversational completion's assistant text.

    TRL passes ``[{"role": "assistant", "content": ...}]`` for conversational datasets. All
    assistant messages are joined in order (tool results in between are not the policy's
    words); content given as parts (``[{"type": "text", "text": ...}]``) is joined too.

    >>> completion_text([{"role": "assistant", "content": "[]"}]), completion_text("[]")
    ('[]', '[]')
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        completion = [completion]
    if not isinstance(completion, Sequence):
        raise TypeError(f"completion must be a str or a list of chat messages, got {type(completion).__name__}")
    parts = []
    for m in completion:
        if m.get("role", "assistant") != "assistant":
            continue
        content = m.get("content") or ""
        if not isinstance(content, str):  # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text")
        parts.append(content)
    return "".join(parts)


def format_gate(raw: Any, decision_positions: Sequence[int]) -> GateVerdict:
    """I[o in V]: drop a leading think trace, then the strict gate (``construct.gate``).

    ``.ok`` is the reward's indicator: a single JSON array, the schema, exactly one decision
    per message, content for every KEEP and "" for every DROP. ``.fmt_ok`` is Gate Fmt.

    >>> v = format_gate('<think>two messages</think>[{"op": "KEEP", "compressed_content": "", '
    ...                 '"reason": ""}, {"op": "DROP", "compressed_content": "", "reason": ""}]', [0, 1])
    >>> v.ok, v.fmt_ok, v.reason
    (False, True, 'keep_empty_content')
    """
    return parse_decisions(strip_think(raw) if isinstance(raw, str) else raw, decision_positions)


def _op(d: Decision | str) -> str:
    op = d.op if isinstance(d, Decision) else d
    if op not in ("KEEP", "DROP"):
        raise ValueError(f"decision op {op!r}: must be 'KEEP' or 'DROP'")
    return op


def action_accuracies(
    decisions: Sequence[Decision | str], gold_labels: Sequence[bool]
) -> tuple[float | None, float | None]:
    """(A_g, A_n): the fraction of gold messages kept and of non-gold messages dropped.

    A category the window does not contain has accuracy None. ``decisions`` are Decisions
    (or their ops), aligned with ``gold_labels``.

    >>> action_accuracies(["KEEP", "DROP", "KEEP", "DROP"], [True, True, False, False])
    (0.5, 0.5)
    >>> action_accuracies(["DROP"], [False])
    (None, 1.0)
    """
    ops = [_op(d) for d in decisions]
    if len(ops) != len(gold_labels):
        raise ValueError(f"{len(ops)} decisions for {len(gold_labels)} gold labels")
    gold = [op == "KEEP" for op, g in zip(ops, gold_labels) if g]
    rest = [op == "DROP" for op, g in zip(ops, gold_labels) if not g]
    return (sum(gold) / len(gold) if gold else None, sum(rest) / len(rest) if rest else None)


def _check_unit(name: str, v: Any) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
        raise ValueError(f"{name}={v!r}: must be a number in [0, 1]")


def action_reward(decisions: Sequence[Decision | str], gold_labels: Sequence[bool], eta: float = ETA) -> float:
    """R_act (paper Eq. action_reward): eta A_g + (1 - eta) A_n for a window with both kinds.

    A window holding one category scores that category's accuracy (the paper: "used
    directly"). A window with no message to decide scores 1.0 (our choice; the paper is
    silent): nothing can be decided wrongly, and a valid "[]" must still out-score an
    invalid output so the gate keeps its signal.

    >>> ops = ["KEEP", "DROP", "KEEP", "DROP", "DROP"]
    >>> round(action_reward(ops, [True, True, False, False, False]), 4)  # 0.915*0.5 + 0.085*2/3
    0.5142
    >>> action_reward(["KEEP"], [True]), action_reward(["KEEP"], [False]), action_reward([], [])
    (1.0, 0.0, 1.0)
    """
    _check_unit("eta", eta)
    a_g, a_n = action_accuracies(decisions, gold_labels)
    if a_g is None and a_n is None:
        return 1.0
    if a_g is None or a_n is None:
        return a_g if a_n is None else a_n
    return eta * a_g + (1 - eta) * a_n


def composite_reward(valid: bool, r_act: float | None, r_qual: float | None, lam: float) -> float:
    """R(o; p) = I[o in V] ((1 - lam) R_act + lam R_qual) (paper Eq. reward).

    An invalid output scores 0 whatever else is given; with lam = 0, R_qual is not needed
    (None is fine), which is what makes the first curriculum phase free of judge calls.

    >>> composite_reward(False, 1.0, 1.0, 0.5), composite_reward(True, 0.9, None, 0.0)
    (0.0, 0.9)
    >>> composite_reward(True, 0.9, 0.5, 0.5)
    0.7
    """
    _check_unit("lam", lam)
    if not valid:
        return 0.0
    _check_unit("r_act", r_act)
    if lam == 0:
        return float(r_act)
    _check_unit("r_qual", r_qual)
    return (1 - lam) * r_act + lam * r_qual


def curriculum_lambda(
    format_valid_rate: float, switched: bool = False, tau: float = TAU, phase2: float = LAMBDA_PHASE2
) -> float:
    """lam for the next steps: phase 2's weight once the validation format-validity rate has
    exceeded tau (strictly), phase 1's (0) before; the switch is one-way (``switched``).

    Use the strict gate rate (the reward's I[o in V]), not Gate Fmt.

    >>> curriculum_lambda(0.99), curriculum_lambda(0.995), curriculum_lambda(0.5, switched=True)
    (0.0, 0.5, 0.5)
    """
    _check_unit("format_valid_rate", format_valid_rate)
    return phase2 if switched or format_valid_rate > tau else LAMBDA_PHASE1


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _source_messages(pos: int, source: Any) -> tuple[Message, ...]:
    """The judge's source_messages for one decision: a {"role", "content", "timestamp"} dict
    (or a list of them) from the dataset's ``sources`` column."""
    items = [source] if isinstance(source, Mapping) else list(source or [])
    if not items or not all(isinstance(s, Mapping) and {"role", "content", "timestamp"} <= set(s) for s in items):
        raise ValueError(
            f"sources for position {pos}: need a {{'role', 'content', 'timestamp'}} dict "
            f"(or a list of them), got {str(source)[:80]!r}"
        )
    return tuple(Message(pos, "", "", 0, str(s["role"]), str(s["content"]), str(s["timestamp"])) for s in items)


class LazyMemReward:
    """The paper's composite reward as a TRL reward function (picklable, with settings).

    Called by ``GRPOTrainer`` as ``reward(prompts=..., completions=..., completion_ids=...,
    trainer_state=..., log_metric=..., log_extra=..., **dataset_columns)``. Per-sample columns
    it reads: ``decision_positions`` (list[int]) and ``gold_labels`` (list[bool], aligned);
    when lam > 0 also ``query``, ``query_time``, ``gold_answer``, ``reasoning_chain`` (may be
    "") and ``sources`` (per decision position, the source message as {"role", "content",
    "timestamp"}). Others are ignored.

    Returns one reward per completion: 0.0 for an output failing the strict gate (never judged:
    no judge calls are spent on unparsable rollouts), None when lam > 0 and a kept message could
    not be judged (TRL turns None into NaN and gives the rollout zero advantage, outside its
    group's baseline), otherwise the composite reward in [0, 1].

    ``lam`` is mutable: the curriculum callback sets ``reward.lam = LAMBDA_PHASE2`` (a judge is
    then required). ``last_stats`` describes the last call: n, strict_gate and gate_fmt (rates),
    r_act (mean over valid outputs), r_qual (mean over judged ones), reward (mean over scored
    ones), unscored (count of None), judge_calls and judge_failures (this call), lam, and
    gate_failures (count by failure kind). Logging: when TRL passes ``log_metric`` (TRL 1.16
    does) the numeric ones are logged as ``lazymem/<name>`` beside TRL's own metrics, and
    ``log_extra`` adds per-completion columns gate / r_act / r_qual to the completions table;
    any other trainer callback can read ``reward.last_stats`` in ``on_log``.

    >>> reward = LazyMemReward()
    >>> keep_drop = [{"role": "assistant", "content": '[{"op": "KEEP", "compressed_content": "Lisbon.", '
    ...               '"reason": ""}, {"op": "DROP", "compressed_content": "", "reason": ""}]'}]
    >>> reward(prompts=[[], []], completions=[keep_drop, [{"role": "assistant", "content": "[]"}]],
    ...        decision_positions=[[3, 4], [3, 4]], gold_labels=[[True, False], [True, False]])
    [1.0, 0.0]
    >>> reward.last_stats["strict_gate"], reward.last_stats["gate_failures"]
    (0.5, {'wrong_count': 1})
    """

    __name__ = "lazymem_reward"  # TRL names the reward's metrics after this

    def __init__(self, eta: float = ETA, lam: float = LAMBDA_PHASE1, judge: QualityJudge | None = None):
        _check_unit("eta", eta)
        self.eta = eta
        self.judge = judge
        self.lam = lam
        self.last_stats: dict[str, Any] = {}

    @property
    def lam(self) -> float:
        """The quality weight lambda_qual in [0, 1]; > 0 needs a judge."""
        return self._lam

    @lam.setter
    def lam(self, value: float) -> None:
        _check_unit("lam", value)
        self._need_judge(value)  # before assigning: a refused switch leaves lam as it was
        self._lam = float(value)

    def _need_judge(self, lam: float) -> None:
        if lam > 0 and self.judge is None:
            raise ConfigError(
                f"LazyMemReward: lam={lam} weighs the quality reward, which needs a judge "
                "(LazyMemReward(judge=QualityJudge(client)) or reward.judge = ...); lam=0 needs none"
            )

    @staticmethod
    def _column(columns: Mapping, name: str, n: int) -> list:
        if name not in columns:
            raise ValueError(f"LazyMemReward needs the dataset column {name!r} (got columns {sorted(columns)})")
        values = list(columns[name])
        if len(values) != n:
            raise ValueError(f"column {name!r} has {len(values)} values for {n} completions")
        return values

    def _kept(self, i: int, verdict: GateVerdict, columns: Mapping[str, list]) -> list[KeptMessage]:
        sources = columns["sources"][i]
        if len(sources) != len(verdict.decisions):
            raise ValueError(f"sample {i}: {len(sources)} sources for {len(verdict.decisions)} decision positions")
        ctx = {k: columns[k][i] or "" for k in ("query", "query_time", "gold_answer", "reasoning_chain")}
        return [
            KeptMessage(d.content, _source_messages(d.pos, src), **ctx)
            for d, src in zip(verdict.decisions, sources)
            if d.op == "KEEP"
        ]

    def __call__(
        self,
        prompts: Sequence | None = None,
        completions: Sequence | None = None,
        completion_ids: Sequence | None = None,
        **columns: Any,
    ) -> list[float | None]:
        if completions is None:
            raise TypeError("LazyMemReward needs completions=")
        n, lam = len(completions), self.lam
        self._need_judge(lam)
        positions = self._column(columns, "decision_positions", n)
        labels = self._column(columns, "gold_labels", n)
        for i, (pos, lab) in enumerate(zip(positions, labels)):
            if len(pos) != len(lab):
                raise ValueError(f"sample {i}: {len(lab)} gold labels for {len(pos)} decision positions")
        verdicts = [format_gate(completion_text(c), pos) for c, pos in zip(completions, positions)]
        r_act = [action_reward(v.decisions, lab, self.eta) if v.ok else None for v, lab in zip(verdicts, labels)]
        r_qual: list[float | None] = [None] * n
        calls = failures = 0
        if lam > 0:
            cols = {k: self._column(columns, k, n) for k in QUALITY_COLUMNS}
            valid = [i for i, v in enumerate(verdicts) if v.ok]
            calls0, failures0 = self.judge.calls, sum(self.judge.failures.values())
            for i, q in zip(valid, self.judge.score([self._kept(i, verdicts[i], cols) for i in valid])):
                r_qual[i] = q
            calls, failures = self.judge.calls - calls0, sum(self.judge.failures.values()) - failures0
        rewards = [
            None if v.ok and lam > 0 and rq is None else composite_reward(v.ok, ra, rq, lam)
            for v, ra, rq in zip(verdicts, r_act, r_qual)
        ]
        self._record(verdicts, r_act, r_qual, rewards, calls, failures, lam, columns)
        return rewards

    def _record(self, verdicts, r_act, r_qual, rewards, calls, failures, lam, columns) -> None:
        n = len(verdicts)
        scored = [r for r in rewards if r is not None]
        self.last_stats = {
            "n": n,
            "strict_gate": _mean([float(v.ok) for v in verdicts]),
            "gate_fmt": _mean([float(v.fmt_ok) for v in verdicts]),
            "r_act": _mean([r for r in r_act if r is not None]),
            "r_qual": _mean([r for r in r_qual if r is not None]),
            "reward": _mean(scored),
            "unscored": n - len(scored),
            "judge_calls": calls,
            "judge_failures": failures,
            "lam": lam,
            "gate_failures": dict(Counter(v.reason for v in verdicts if not v.ok)),
        }
        log_metric, log_extra = columns.get("log_metric"), columns.get("log_extra")
        if callable(log_metric):
            for k in ("strict_gate", "gate_fmt", "r_act", "r_qual", "unscored", "judge_failures", "lam"):
                v = self.last_stats[k]
                if v is not None and math.isfinite(v):  # an absent mean is left out, not logged as 0
                    log_metric(f"lazymem/{k}", float(v))
        if callable(log_extra):
            log_extra("gate", [v.reason for v in verdicts])
            log_extra("r_act", list(r_act))
            log_extra("r_qual", list(r_qual))
