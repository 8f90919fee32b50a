"""One sweep engine: cells with a result folder each, a freshness check, a run per cell, a table.

Every grid of the project goes through ``run_cells``: eval-table's sets x rows (``lazymem.eval.table``),
the training window table (``lazymem.train.window_table``), the papermill grids
(``lazymem.notebooks.runner``) and notebook 09's points (``lazymem.notebooks.ablations``). What the
engine does with a cell follows from its ``check``:

- ``None``, no results yet: run it (``ran``);
- ``[]``, its results were made from the same inputs: read back with ``load`` (``reused``); a
  consumer that resumes (``resume=True``: the eval runner finishes a cut-short run and costs nothing
  on a finished one) gets ``run`` called all the same (``resumed``);
- ``["what changed", ...]``, stale: the cell's ``results`` are set aside into
  ``<folder>/previous-<UTC time>/`` (never deleted) and it is run afresh (``recomputed``).

A cell that selection leaves out (``selected=False``: eval-table's ``only``) is never run: read back
when fresh (``reused``), flagged when stale (``stale``, its old numbers not shown), left out when it
has no results (``skipped``). With ``catch=True`` a cell whose run raises is ``failed`` (the error
kept) and the other cells still run. ``write_table`` writes ``table.json`` and ``table.md`` atomically.

With ``jobs`` (a ``Jobs`` whose executor is ``local`` or ``slurm``, lazymem.jobs) the same decisions are
made in this process, then every cell to run becomes one job or several (``Jobs.tasks``: a cell's
shards), all submitted at once (``max_parallel`` in flight) and waited for; ``Jobs.finish`` then makes
the cell's result from its jobs' results here (e.g. merges the shards). A fresh cell that
``Jobs.done`` calls finished is read back rather than handed to a job. Without ``catch`` a failed job
raises JobsFailedError once every job has ended; the jobs' logs and ``jobs.json`` are in
``<Jobs.out_dir>/jobs/``. An inline ``Jobs`` is the same as none.

>>> import tempfile
>>> root = Path(tempfile.mkdtemp())
>>> def run(cell, changes):  # a cell's result: a file in its folder
...     cell.folder.mkdir(parents=True, exist_ok=True)
...     (cell.folder / "out.txt").write_text(cell.spec)
...     return cell.spec
>>> def check(cell):  # fresh when the stored text is the cell's spec
...     p = cell.folder / "out.txt"
...     return None if not p.exists() else [] if p.read_text() == cell.spec else [f"spec: {p.read_text()}"]
>>> load = lambda cell: (cell.folder / "out.txt").read_text()
>>> cells = [Cell(("a",), root / "a", "x", results=("out.txt",)), Cell(("b",), root / "b", "y")]
>>> [o.status for o in run_cells(cells, check=check, run=run, load=load, progress=None)]
['ran', 'ran']
>>> [o.status for o in run_cells(cells, check=check, run=run, load=load, progress=None)]
['reused', 'reused']
>>> cells[0] = Cell(("a",), root / "a", "z", results=("out.txt",))
>>> o = run_cells(cells, check=check, run=run, load=load, progress=None)[0]
>>> o.status, o.changes, o.mark(), [p.name[:9] for p in (root / "a").iterdir() if p.is_dir()]
('recomputed', ('spec: x',), {'recomputed': 'spec: x'}, ['previous-'])
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lazymem.files import fsync_dir, write_atomic, write_json

PREVIOUS_PREFIX = "previous-"  # <folder>/previous-<UTC time>/: a stale cell's results, set aside
STATUSES = ("ran", "resumed", "reused", "recomputed", "stale", "skipped", "failed")
TABLE_FILES = ("table.json", "table.md")  # a sweep's own files in its output folder


@dataclass(frozen=True)
class Cell:
    """One point of a sweep: where its results live and what they must have been made from."""

    key: tuple[str, ...]  # its names, e.g. (set, row): progress lines and tables name it so
    folder: Path  # its results' folder
    spec: Any = None  # the cell's settings (a config), for the consumer's check and run
    selected: bool = True  # False: selection (``only``) leaves it out: never run, flagged when stale
    results: tuple[str, ...] = ()  # files set aside before a recompute (empty: the run sets aside itself)


@dataclass(frozen=True)
class Jobs:
    """How ``run_cells`` runs its cells as jobs (module docstring; lazymem.jobs)."""

    config: Any  # a lazymem.jobs.JobsConfig
    out_dir: Path  # the sweep's output folder: jobs/ goes there
    tasks: Callable[[Cell, tuple[str, ...]], list] | None = None  # a cell's jobs (lazymem.jobs.Task); None: run
    finish: Callable[[Cell, tuple[str, ...], list], Any] | None = None  # the cell's result from its jobs' results
    done: Callable[[Cell], bool] | None = None  # resume=True: a fresh cell that needs no job
    command: tuple[str, ...] = ()  # the sweep's command line (``lazymem jobs`` resubmits with it)
    only_index: int | None = None  # which part of a cell's key the sweep's ``only`` names


class JobsFailedError(RuntimeError):
    """Cells whose jobs failed (``run_cells`` with jobs and without catch); each named with its error."""


@dataclass(frozen=True)
class Outcome:
    """What happened to one cell (``status`` is one of STATUSES)."""

    cell: Cell
    status: str  # ran, resumed, reused, recomputed, stale, skipped or failed
    result: Any = None  # what run returned, or load read back (None: stale, skipped, failed)
    changes: tuple[str, ...] = ()  # why its earlier results were stale (recomputed, stale)
    error: str | None = None  # failed: what went wrong
    duration_s: float = 0.0  # time of its run (0 when not run)
    set_aside_to: str | None = None  # recomputed: the previous-<time>/ folder its old results went to

    @property
    def shown(self) -> bool:
        """Whether the cell has a current result to show (stale, skipped and failed cells have none)."""
        return self.status in ("ran", "resumed", "reused", "recomputed")

    def mark(self) -> dict[str, str]:
        """The note a table row carries: ``{"recomputed": changes}``, ``{"stale": changes}``,
        ``{"failed": error}``, else nothing.

        >>> Outcome(Cell(("s", "r"), Path("x")), "stale", changes=("a: 1 -> 2", "b")).mark()
        {'stale': 'a: 1 -> 2; b'}
        """
        if self.status in ("recomputed", "stale"):
            return {self.status: "; ".join(self.changes)}
        return {"failed": self.error or ""} if self.status == "failed" else {}


def set_aside(folder: Path, names: Iterable[str]) -> Path | None:
    """Move ``names`` of ``folder`` that exist into ``folder/previous-<UTC time>/`` (never deletes
    anything); returns that folder (None: nothing to move)."""
    folder = Path(folder)
    present = [n for n in names if (folder / n).exists()]
    if not present:
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    dest, i = folder / f"{PREVIOUS_PREFIX}{stamp}", 1
    while dest.exists():
        dest, i = folder / f"{PREVIOUS_PREFIX}{stamp}-{i}", i + 1
    dest.mkdir()
    for name in present:
        os.replace(folder / name, dest / name)
    fsync_dir(dest)
    fsync_dir(folder)
    return dest


def error_text(e: BaseException) -> str:
    """``ExceptionName: message``, how a failed cell records its error."""
    return f"{type(e).__name__}: {e}"


def run_cells(
    cells: Iterable[Cell],
    *,
    check: Callable[[Cell], Sequence[str] | None],
    run: Callable[[Cell, tuple[str, ...]], Any],
    load: Callable[[Cell], Any] = lambda cell: None,
    resume: bool = False,
    catch: bool = False,
    describe: Callable[[BaseException], str] = error_text,
    progress: str | None = "lines",
    label: str = "sweep",
    jobs: Jobs | None = None,
) -> list[Outcome]:
    """Run every cell that needs it, in order; one Outcome per cell (module docstring).

    Args:
        cells: the sweep's cells.
        check: a cell's state: None (no results), [] (fresh) or the changes that make it stale.
        run: computes a cell, given the changes (empty unless recomputed); returns its result.
        load: reads a fresh cell's result back (None: nothing readable, so a selected cell runs).
        resume: call ``run`` on selected fresh cells too (a resumable run finishes what is missing).
        catch: record a cell whose run raises as ``failed`` (``describe`` writes its error) and go on.
        progress: ``"lines"`` prints ``[label] key / key`` before each run, ``"bar"`` shows a tqdm
            bar over the cells, None neither.
        label: the progress lines' tag and the bar's title.
        jobs: run the cells as local or Slurm jobs (module docstring); None or inline: in this process.
    """
    if progress not in ("lines", "bar", None):
        raise ValueError(f"run_cells: progress must be 'lines', 'bar' or None, got {progress!r}")
    cells = list(cells)
    if jobs is not None and not jobs.config.inline:
        return _as_jobs(cells, check, run, load, resume, catch, describe, progress is not None, label, jobs)
    bar = None
    if progress == "bar":
        from tqdm.auto import tqdm

        bar = tqdm(total=len(cells), desc=label, unit="cell")
    outcomes = []
    try:
        for cell in cells:
            if bar is not None:
                bar.set_postfix_str(" / ".join(cell.key))
            outcomes.append(_one(cell, check, run, load, resume, catch, describe, progress == "lines", label))
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return outcomes


def _without_run(cell: Cell, changes: tuple[str, ...] | None, load, resume: bool) -> Outcome | None:
    """The outcome of a cell that is not run (left out, or fresh and read back); None: it runs."""
    if not cell.selected:
        if changes:
            return Outcome(cell, "stale", changes=changes)
        result = load(cell) if changes == () else None
        return Outcome(cell, "reused", result) if result is not None else Outcome(cell, "skipped")
    if changes == () and not resume:
        result = load(cell)
        if result is not None:
            return Outcome(cell, "reused", result)
    return None


def _one(cell: Cell, check, run, load, resume: bool, catch: bool, describe, lines: bool, label: str) -> Outcome:
    """One cell through the engine (see run_cells)."""
    found = check(cell)
    changes = tuple(found) if found is not None else None
    decided = _without_run(cell, changes, load, resume)
    if decided is not None:
        return decided
    status = "recomputed" if changes else "resumed" if changes == () else "ran"
    if lines:
        print(
            f"[{label}] {' / '.join(cell.key)}" + (f" (recomputed: {'; '.join(changes)})" if changes else ""),
            flush=True,
        )
    moved = set_aside(cell.folder, cell.results) if changes and cell.results else None
    t0 = time.perf_counter()
    try:
        result = run(cell, changes or ())
    except Exception as e:  # catch=True: a failing cell is recorded, the others still run
        if not catch:
            raise
        return Outcome(
            cell,
            "failed",
            None,
            changes or (),
            describe(e),
            round(time.perf_counter() - t0, 3),
            moved.name if moved else None,
        )
    return Outcome(
        cell, status, result, changes or (), None, round(time.perf_counter() - t0, 3), moved.name if moved else None
    )


def _as_jobs(
    cells: list[Cell], check, run, load, resume: bool, catch: bool, describe, lines: bool, label: str, jobs: Jobs
) -> list[Outcome]:
    """run_cells with jobs: decide every cell here, run the ones to run as jobs, finish them here."""
    from lazymem.jobs import Task, run_tasks

    outcomes: list[Outcome | None] = []
    pending = []  # (place, cell, changes, status, set aside to, its tasks)
    for cell in cells:
        found = check(cell)
        changes = tuple(found) if found is not None else None
        decided = _without_run(
            cell, changes, load, resume and not (changes == () and jobs.done is not None and jobs.done(cell))
        )
        if decided is not None:
            outcomes.append(decided)
            continue
        status = "recomputed" if changes else "resumed" if changes == () else "ran"
        moved = set_aside(cell.folder, cell.results) if changes and cell.results else None
        tasks = (
            jobs.tasks(cell, changes or ())
            if jobs.tasks is not None
            else [Task(cell.key, cell.folder, run, (cell, changes or ()))]
        )
        pending.append((len(outcomes), cell, changes or (), status, moved.name if moved else None, tasks))
        outcomes.append(None)
    ended = run_tasks(
        [t for p in pending for t in p[5]],
        jobs.config,
        jobs.out_dir,
        label=label,
        command=jobs.command,
        only_index=jobs.only_index,
        describe=describe,
        lines=lines,
    )
    failures = []
    for place, cell, changes, status, moved, tasks in pending:
        mine, ended = ended[: len(tasks)], ended[len(tasks) :]
        duration = round(max((e.duration_s for e in mine), default=0.0), 3)
        error = next((e.error for e in mine if not e.ok), None)
        if error is None:
            try:
                result = jobs.finish(cell, changes, [e.result for e in mine]) if jobs.finish else mine[0].result
            except Exception as e:  # e.g. shards that do not merge
                error = describe(e)
        if error is not None:
            failures.append(f"{' / '.join(cell.key)}: {error}")
            outcomes[place] = Outcome(cell, "failed", None, changes, error, duration, moved)
        else:
            outcomes[place] = Outcome(cell, status, result, changes, None, duration, moved)
    if failures and not catch:
        raise JobsFailedError(
            f"{len(failures)} cell(s) failed as jobs (logs: {Path(jobs.out_dir) / 'jobs'}; "
            f"lazymem jobs {jobs.out_dir}): " + "; ".join(failures)
        )
    return outcomes


def json_changes(old: Any, new: Any, where: str = "") -> list[str]:
    """What differs between two JSON-like identities, as ``key: old -> new`` (nested keys dotted;
    ``absent`` for a key only one side has).

    >>> json_changes({"a": 1, "m": {"b": 2, "d": 0}}, {"a": 1, "m": {"b": 3, "c": None, "d": 0}})
    ['m.b: 2 -> 3', 'm.c: absent -> None']
    >>> json_changes(None, {"a": 1})
    ['identity: not recorded']
    """
    if old is None and not where:
        return ["identity: not recorded"]
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        out = []
        for k in sorted(set(old) | set(new), key=str):
            name = f"{where}.{k}" if where else str(k)
            if k not in old or k not in new:
                out.append(f"{name}: {old[k] if k in old else 'absent'} -> {new[k] if k in new else 'absent'}")
            else:
                out += json_changes(old[k], new[k], name)
        return out
    return [] if old == new else [f"{where or 'identity'}: {old} -> {new}"]


def mark_notes(rows: Mapping[str, Mapping], texts: Mapping[str, str]) -> list[str]:
    """Markdown lines under a table, ``- <row> <text>: <its mark>``, for each mark of ``texts`` in
    turn (a table row carries its Outcome's ``mark()``).

    >>> mark_notes({"a": {"stale": "x: 1 -> 2"}, "b": {}, "c": {"recomputed": "y"}},
    ...            {"recomputed": "recomputed", "stale": "stale, not shown"})
    ['- c recomputed: y', '- a stale, not shown: x: 1 -> 2']
    """
    return [f"- {name} {text}: {r[mark]}" for mark, text in texts.items() for name, r in rows.items() if r.get(mark)]


def write_table(out_dir: str | os.PathLike, table: Mapping, markdown: str) -> None:
    """Write a sweep's ``table.json`` and ``table.md`` into ``out_dir`` (created), each all at once."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / TABLE_FILES[0], table)
    write_atomic(out / TABLE_FILES[1], markdown)
