"""Trainer logs as rows: what the training notebooks plot and the README's tables quote.

``log_rows(log_history)`` merges Hugging Face ``TrainerState.log_history`` entries (and the
curriculum's ``curriculum/*`` entries) into one row per step, numeric values only;
``curriculum_events`` finds the step where lambda_qual switched.

>>> rows = log_rows([{"step": 1, "loss": 0.5, "reward": 0.1}, {"curriculum/step": 1, "step": 1,
...                  "curriculum/lam": 0.0}, {"step": 2, "loss": 0.4, "curriculum/lam": 0.5}])
>>> rows
[{'step': 1, 'loss': 0.5, 'reward': 0.1, 'curriculum/lam': 0.0}, {'step': 2, 'loss': 0.4, 'curriculum/lam': 0.5}]
>>> curriculum_events(rows)
{2: 'lambda_qual 0.0 -> 0.5'}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


def log_rows(log_history: Sequence[Mapping[str, Any]]) -> list[dict]:
    """One dict per step (sorted), merging every entry logged at that step; non-numbers dropped."""
    by_step: dict[int, dict] = {}
    for entry in log_history:
        step = entry.get("step", entry.get("curriculum/step"))
        if step is None:
            continue
        row = by_step.setdefault(int(step), {"step": int(step)})
        for k, v in entry.items():
            if k in ("step", "curriculum/step") or isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            if isinstance(v, float) and not math.isfinite(v):
                continue
            row[k] = v
    return [by_step[s] for s in sorted(by_step)]


def curriculum_events(rows: Sequence[Mapping[str, Any]], key: str = "curriculum/lam") -> dict[int, str]:
    """Steps where the logged lambda changed, with a label."""
    out, last = {}, None
    for r in rows:
        lam = r.get(key)
        if lam is None:
            continue
        if last is not None and lam != last:
            out[int(r["step"])] = f"lambda_qual {last} -> {lam}"
        last = lam
    return out


WALL_FILE = "wall_clock.json"  # written into every checkpoint folder


def wall_clock_callback(resume_from: str | None = None) -> Any:
    """A TrainerCallback that keeps the run's total training seconds across interruptions.

    Each checkpoint gets ``wall_clock.json`` (``seconds``: training time up to that checkpoint
    summed over every process that worked on the run; ``segments``: how many); a resumed run
    starts from the value saved with its checkpoint. ``.total()`` is the time so far.
    """
    import json
    import time
    from pathlib import Path

    from transformers import TrainerCallback

    before, segments = 0.0, 0
    if resume_from and (Path(resume_from) / WALL_FILE).is_file():
        saved = json.loads((Path(resume_from) / WALL_FILE).read_text(encoding="utf-8"))
        before, segments = float(saved.get("seconds", 0.0)), int(saved.get("segments", 0))

    class WallClock(TrainerCallback):
        def __init__(self):
            self.start = time.perf_counter()
            self.segments = segments + 1

        def total(self) -> float:
            return before + time.perf_counter() - self.start

        def on_train_begin(self, args, state, control, **kw):
            self.start = time.perf_counter()

        def on_save(self, args, state, control, **kw):
            ckpt = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if ckpt.is_dir():
                (ckpt / WALL_FILE).write_text(
                    json.dumps({"seconds": round(self.total(), 1), "segments": self.segments}) + "\n", encoding="utf-8"
                )

    return WallClock()


def time_budget_callback(seconds: float, clock: Any = None) -> Any:
    """A TrainerCallback that ends training (with a checkpoint) once ``seconds`` have passed.

    For leased machines and sessions with a hard end: the step in flight finishes, the trainer
    saves a checkpoint, and ``train_and_record`` writes ``final`` as usual, so what was trained is
    kept and a rerun with a larger budget resumes from it. ``clock`` (``time.monotonic`` by
    default) is for tests. The budget counts from when the callback is made, model loading included.
    """
    import time

    from transformers import TrainerCallback

    if not (isinstance(seconds, (int, float)) and seconds > 0):
        raise ValueError(f"time budget must be a number of seconds > 0, got {seconds!r}")
    now = clock or time.monotonic

    class TimeBudget(TrainerCallback):
        def __init__(self):
            self.start, self.seconds, self.stopped_at_step = now(), float(seconds), None

        def on_step_end(self, args, state, control, **kw):
            if now() - self.start >= self.seconds and self.stopped_at_step is None:
                self.stopped_at_step = state.global_step
                control.should_training_stop = True
                control.should_save = True
            return control

    return TimeBudget()
