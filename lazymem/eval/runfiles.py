"""The files of a run folder: their names, crash-safe reading and writing, secret masking, and resuming.

A run folder holds ``records.jsonl`` (one line per question, appended and fsynced as each
finishes), ``errors.jsonl`` (error records that a rerun redid), ``summary.json``,
``manifest.json`` and ``windows.jsonl`` (one line per window, for the window explorer).

One run writes a folder at a time: ``RunLock`` holds an exclusive lock on ``.lock`` (the OS
drops it when the holder dies, even by kill -9) and names its holder in ``.lock.json``.
A rerun resumes only records of the same configuration, dataset bytes and prompts
(``run_identity``); anything else, or records without a manifest, is refused until
``set_aside`` (``--force-new``) moves the old results into ``previous-<time>/``.

``load_records`` reads a records file into typed ``RunRecord``s (lazymem.eval.records); every
reader of records goes through it (``read_records`` is the raw JSON-lines layer below it).

>>> latest_records([{"question_id": "a", "status": "error"}, {"question_id": "b"},
...                 {"question_id": "a", "status": "ok"}])["a"]["status"]
'ok'
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lazymem.errors import ConfigError, LoadError
from lazymem.eval.records import RunRecord
from lazymem.eval.records.part import json_kind
from lazymem.files import fsync_dir, write_atomic  # noqa: F401  (write_atomic: the run files API)
from lazymem.files import read_jsonl as read_jsonl_file
from lazymem.secrets import Masker

if TYPE_CHECKING:
    from lazymem.llm import LLMConfig

RECORDS_FILE = "records.jsonl"
ERRORS_FILE = "errors.jsonl"
SUMMARY_FILE = "summary.json"
MANIFEST_FILE = "manifest.json"
WINDOWS_FILE = "windows.jsonl"  # read by lazymem.notebooks.load_window_records
RESULT_FILES = (RECORDS_FILE, ERRORS_FILE, SUMMARY_FILE, WINDOWS_FILE)  # what force_new=True sets aside
LOCK_FILE = ".lock"  # flock'ed by the one run writing the folder
LOCK_INFO_FILE = ".lock.json"  # who holds it: pid, host, start, command
WAY_OUT = (
    "rerun with --force-new (evaluate(..., force_new=True)) to move the old results aside into "
    "{out}/previous-<time>/ and start afresh, or use another output folder"
)


# --- errors -----------------------------------------------------------------------------------------


class RunLockedError(ConfigError):
    """Another run holds the run folder's lock; names the folder and the holder (pid, host, start)."""

    def __init__(self, folder: str | os.PathLike, holder: Mapping | None):
        self.folder, self.holder = str(folder), dict(holder or {})
        h = self.holder
        who = (
            f"pid {h.get('pid')} on host {h.get('host')}, started {h.get('start')}"
            if h
            else f"holder unknown (no readable {LOCK_INFO_FILE})"
        )
        super().__init__(
            f"{self.folder} is locked by another run ({who}); one run writes a run folder at a time: "
            f"wait for it to end or use another output folder "
            f"(lock {Path(self.folder) / LOCK_FILE}, released by the OS when its holder dies)"
        )


class ResumeMismatchError(ConfigError):
    """The folder's records came from another config, dataset or prompts; lists each change (old -> new)."""

    def __init__(self, folder: str | os.PathLike, changes: list[str]):
        self.folder, self.changes = str(folder), list(changes)
        what = "a different configuration" if any(c.startswith("config") for c in changes) else "different inputs"
        super().__init__(
            f"{self.folder} holds records of {what}; refusing to mix them: "
            + "; ".join(changes)
            + ". "
            + WAY_OUT.format(out=self.folder)
        )


class UnmanifestedRecordsError(ConfigError):
    """records.jsonl without a readable manifest.json: what made the records is unknown, so no resume."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = str(folder)
        super().__init__(
            f"{self.folder} has {RECORDS_FILE} but no readable {MANIFEST_FILE}, so which config, "
            f"dataset and prompts made those records is unknown; refusing to resume them. "
            + WAY_OUT.format(out=self.folder)
        )


class ForeignRecordError(ConfigError):
    """A line of records.jsonl that this folder's runs did not write (copied or appended from another run
    folder): names the file, the line and both identities (the record's and the folder's)."""

    def __init__(self, path: str | os.PathLike, line: int, record_identity: str, folder_identity: str, why: str):
        self.path, self.line = str(path), line
        folder = str(Path(path).parent)
        super().__init__(
            f"{self.path}: line {line}: a record that is not this run folder's ({why}): "
            f"the record says {record_identity}; {Path(path).parent / MANIFEST_FILE} says {folder_identity}. "
            "Refusing to mix runs: " + WAY_OUT.format(out=folder)
        )


# --- reading ----------------------------------------------------------------------------------------


def read_records(path: str | os.PathLike) -> tuple[list[dict], bool]:
    """Records of a records.jsonl (or errors.jsonl) and whether its last line was cut off (and is left out).

    ``lazymem.files.read_jsonl`` with ``question_id`` required: only the last line may be
    incomplete (an append interrupted by a kill, or one whose newline never made it); a bad line
    anywhere else means the file was damaged otherwise, and is a LoadError naming file and line.
    """
    return read_jsonl_file(path, keys=("question_id",), what="a question record")


def load_records(path: str | os.PathLike) -> tuple[list[RunRecord], bool]:
    """The RunRecords of a records.jsonl (or errors.jsonl) and whether its last line was cut off.

    ``read_records`` typed: a line whose fields do not fit (a hand-edited score, a list where an
    object belongs) is a LoadError naming the file, the record (place and question id) and the field.
    """
    raw, truncated = read_records(path)
    return [RunRecord.from_json(d, str(path), i) for i, d in enumerate(raw, start=1)], truncated


def latest_records(records: Iterable[Any]) -> dict[str, Any]:
    """The last record (RunRecord, or a raw dict) of every question id, in order of first appearance."""
    out: dict[str, Any] = {}
    for r in records:
        out[r.question_id if isinstance(r, RunRecord) else r["question_id"]] = r
    return out


def read_json(path: str | os.PathLike) -> dict | None:
    """A JSON file's content, or None when it is missing or unreadable."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


MANIFEST_FIX = "it is not a manifest lazymem wrote (edited or damaged): restore it, or move the run folder aside"
_OBJECTS = ("config", "dataset", "prompt_hashes", "models", "backends", "retrieval", "config.pipeline")
_STRINGS = ("config_sha256", "status", "start", "end", "dataset.sha256", "dataset.spec", "config.judge")
_RUN_STRINGS = ("run_id", "config_sha256", "status", "moved_to")


def _at(m: Mapping, dotted: str) -> Any:
    """The value at a dotted path of nested mappings (None where a part is missing)."""
    for part in dotted.split("."):
        m = m.get(part) if isinstance(m, Mapping) else None
    return m


def check_manifest(m: Any, path: str | os.PathLike) -> dict:
    """`m` (a manifest.json's content) when it has the shape ``lazymem eval`` writes; else a LoadError naming
    the file and the field: an object, whose ``config`` / ``dataset`` / ``prompt_hashes`` are objects, whose
    fingerprints and status are strings, and whose ``runs`` / ``merged_from`` are lists of objects with
    string run ids (absent or null values are allowed where an older manifest lacks them, except ``runs``).

    >>> check_manifest({"runs": [{"run_id": "a"}]}, "m.json")["runs"]
    [{'run_id': 'a'}]
    >>> check_manifest({"runs": ["a"]}, "m.json")
    Traceback (most recent call last):
    ...
    lazymem.errors.LoadError: m.json: runs[0], field runs[0]: a string, expected an object (a run: \
run_id, start, end, status, command); it is not a manifest lazymem wrote (edited or damaged): restore it, \
or move the run folder aside
    """
    p = str(path)

    def bad(field: str | None, value: Any, expected: str, record: str | None = None) -> LoadError:
        return LoadError(p, record, field, f"{json_kind(value)}, expected {expected}; {MANIFEST_FIX}")

    if not isinstance(m, dict):
        raise bad(None, m, "an object (a lazymem eval manifest)")
    for field in _OBJECTS:
        v = _at(m, field)
        if v is not None and not isinstance(v, Mapping):
            raise bad(field, v, "an object")
    for field in (*_STRINGS, "config.pipeline.method"):
        v = _at(m, field)
        if v is not None and not isinstance(v, str):
            raise bad(field, v, "a string")
    for name, h in (m.get("prompt_hashes") or {}).items():
        if not isinstance(h, str):
            raise bad(f"prompt_hashes.{name}", h, "a string (a sha256)")
    if "runs" in m and not isinstance(m["runs"], list):
        raise bad("runs", m["runs"], "a list of runs")
    for i, run in enumerate(m.get("runs") or ()):
        where = f"runs[{i}]"
        if not isinstance(run, Mapping):
            raise bad(where, run, "an object (a run: run_id, start, end, status, command)", where)
        for field in _RUN_STRINGS:
            if run.get(field) is not None and not isinstance(run[field], str):
                raise bad(f"{where}.{field}", run[field], "a string", where)
        if run.get("command") is not None and not isinstance(run["command"], list):
            raise bad(f"{where}.command", run["command"], "a list of strings", where)
        _check_merged_from(run.get("merged_from"), f"{where}.merged_from", bad)
    _check_merged_from(m.get("merged_from"), "merged_from", bad)
    return m


def _check_merged_from(entries: Any, field: str, bad) -> None:
    """Raise `bad(...)` unless `entries` is None or a list of objects whose ``run_ids`` are lists of strings."""
    if entries is None:
        return
    if not isinstance(entries, list):
        raise bad(field, entries, "a list of merged run folders")
    for i, e in enumerate(entries):
        if not isinstance(e, Mapping):
            raise bad(f"{field}[{i}]", e, "an object (run_dir, shard, run_ids, questions)")
        ids = e.get("run_ids")
        if ids is not None and not (isinstance(ids, list) and all(isinstance(x, str) for x in ids)):
            raise bad(f"{field}[{i}].run_ids", ids, "a list of run ids (strings)")


def load_manifest(path: str | os.PathLike) -> dict | None:
    """A run folder's manifest.json: None when it is missing or not JSON (unreadable: what made the records
    is unknown), the manifest when it has the shape ``lazymem eval`` writes, else a LoadError naming the file
    and the field (``check_manifest``)."""
    try:
        m = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return check_manifest(m, path)


def manifest_runs(manifest: Mapping) -> dict[str, set]:
    """The runs whose records a folder may hold: run id -> the config fingerprints its records may carry.

    The runs the manifest lists (``runs``), except those whose results were set aside (``moved_to``), and
    for a merged folder the shards' runs (``merged_from``), which ran under the merged config's fingerprint.
    """
    out: dict[str, set] = {}
    runs = [r for r in manifest.get("runs") or () if isinstance(r, Mapping)]
    fingerprints = {manifest.get("config_sha256")} | {r.get("config_sha256") for r in runs}
    for r in runs:
        if isinstance(r.get("run_id"), str) and not r.get("moved_to"):
            out.setdefault(r["run_id"], set()).add(r.get("config_sha256") or manifest.get("config_sha256"))
    for entries in [manifest.get("merged_from"), *(r.get("merged_from") for r in runs)]:
        for e in entries if isinstance(entries, list) else ():
            for rid in (e.get("run_ids") or ()) if isinstance(e, Mapping) else ():
                out.setdefault(rid, set()).update(fingerprints)
    for fps in out.values():
        fps.discard(None)
    return out


def _line_number(path: str | os.PathLike, index: int) -> int:
    """The line number of the `index`-th (1-based) non-blank line of a JSON-lines file (blank lines are skipped)."""
    try:
        lines = Path(path).read_bytes().split(b"\n")
    except OSError:
        return index
    seen = 0
    for n, line in enumerate(lines, start=1):
        seen += bool(line.strip())
        if seen == index:
            return n
    return index


def check_records_belong(path: str | os.PathLike, records: Sequence[RunRecord], manifest: Mapping) -> None:
    """Raise ForeignRecordError for the first record of `path` that this folder's runs did not write.

    A record belongs when its ``run_id`` is one of the manifest's runs (``manifest_runs``), its config
    fingerprint (``config_sha256``; records written before they carried one are judged by run id alone) is
    that run's, and its method is the manifest config's. A record without a run id belongs only to a
    manifest that lists no runs (one made by hand). A manifest that is not an object (unknown) checks nothing.
    """
    if not isinstance(manifest, Mapping):
        return
    runs = manifest_runs(manifest)
    method = _at(manifest, "config.pipeline.method")
    listed = bool(manifest.get("runs"))
    folder = f"runs {sorted(runs)}, config_sha256 {_short(manifest.get('config_sha256'))}, method {method!r}"
    for i, r in enumerate(records, start=1):
        why = None
        if r.run_id is None:
            why = "it has no run_id" if listed else None
        elif r.run_id not in runs:
            why = f"run {r.run_id!r} is not one of the folder's runs"
        elif r.config_sha256 is not None and runs[r.run_id] and r.config_sha256 not in runs[r.run_id]:
            why = f"its config fingerprint is not the one run {r.run_id!r} ran under"
        elif method is not None and r.method is not None and r.method != method:
            why = f"it is a record of method {r.method!r}, the folder's runs are of {method!r}"
        if why is not None:
            mine = f"run_id {r.run_id!r}, config_sha256 {_short(r.config_sha256)}, method {r.method!r}"
            raise ForeignRecordError(path, _line_number(path, i), mine, folder, why)


def check_run_folder(
    folder: str | os.PathLike, manifest: Mapping | None, records: Sequence[RunRecord], identity: Mapping
) -> None:
    """The one check of whether a folder's records may be used again (resumed, merged, remeasured, reported):
    every record is one of the folder's runs (``check_records_belong``), and the manifest's identity
    (config, dataset bytes, prompts) is `identity` for the keys `identity` has (``identity_changes``; a
    value the manifest lacks is unknown and never matches). Records without a manifest are refused.

    Raises:
        UnmanifestedRecordsError, ForeignRecordError, ResumeMismatchError (ConfigErrors: the CLI exits 2).
    """
    out = Path(folder)
    if not records:
        return
    if not manifest:
        raise UnmanifestedRecordsError(out)
    check_records_belong(out / RECORDS_FILE, records, manifest)
    changes = identity_changes(manifest_identity(manifest), identity)
    if changes:
        raise ResumeMismatchError(out, changes)


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """The objects of a JSON-lines file of a run folder (``lazymem.files.read_jsonl``: a cut-off
    last line left out, any other bad line a LoadError; [] when missing)."""
    return read_jsonl_file(path)[0]


def window_lines(records: Iterable[RunRecord]) -> list[dict]:
    """Per-window lines for the window explorer (lazymem.notebooks.load_window_records)."""
    out = []
    for r in latest_records(records).values():
        if not r.ok:
            continue
        for i, w in enumerate(r.windows or ()):
            wj = w.to_json()
            line = {
                "question_id": r.question_id,
                # a field the record's window leaves out (optional in WindowRecord) is None on its line
                **{k: wj.get(k) for k in ("positions", "hits", "gold", "merged_id", "sub_id", "verdict", "decisions")},
            }
            if i == 0:
                line.update(memory=r.memory, answer=r.answer, judge=None if r.judge is None else r.judge.to_json())
            out.append(line)
    return out


# --- writing ----------------------------------------------------------------------------------------


def secret_masker(llm_configs: Iterable[LLMConfig | None]) -> Masker:
    """A Masker for the API keys the models would read (belt and braces: none should be in a record).

    The values are those of each model's ``api_key_env`` variable, except "EMPTY" (the
    placeholder of local servers), and the password of a ``base_url`` with userinfo (as
    written and percent-decoded); values under 6 characters are left out.
    """
    from urllib.parse import unquote, urlsplit

    configs = [c for c in llm_configs if c is not None]
    values = [os.environ.get(c.api_key_env, "") for c in configs]
    for c in configs:
        try:
            netloc = urlsplit(c.base_url or "").netloc
        except ValueError:
            continue
        userinfo = netloc.rpartition("@")[0]
        password = userinfo.partition(":")[2] if ":" in userinfo else userinfo
        values += [password, unquote(password)]
    return Masker([v for v in values if v != "EMPTY"], min_len=6)


def append_synced(f, text: str) -> None:
    """Write `text` to an open file and force it to disk (a kill -9 after this loses nothing)."""
    f.write(text)
    f.flush()
    os.fsync(f.fileno())


# --- one writer per folder ---------------------------------------------------------------------------


def _try_lock(fd: int) -> bool:
    """Take an exclusive lock on `fd` without waiting; False when someone else holds it."""
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except (BlockingIOError, PermissionError):
        return False


def _unlock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return
    fcntl.flock(fd, fcntl.LOCK_UN)


class RunLock:
    """The exclusive lock of a run folder (``.lock``), with its holder (pid, host, start) in ``.lock.json``.

    ``acquire`` never waits: when another process holds it, RunLockedError names that holder.
    The lock belongs to the open file, so the OS releases it when the holder exits or is killed
    (no stale lock to clean up); the fd is not inherited by subprocesses (PEP 446).

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> with RunLock(d):
    ...     RunLock(d).acquire()
    Traceback (most recent call last):
    ...
    lazymem.eval.runfiles.RunLockedError: ... is locked by another run (pid ...
    >>> RunLock(d).acquire().release()
    """

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self.info: dict[str, Any] | None = None
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        from lazymem.runinfo import now

        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        if not _try_lock(fd):
            os.close(fd)
            raise RunLockedError(self.folder, read_json(self.folder / LOCK_INFO_FILE))
        self._fd = fd
        # no command line: it may hold a pasted key, and this note outlives a killed run unmasked
        self.info = {"pid": os.getpid(), "host": socket.gethostname(), "start": now()}
        try:
            write_atomic(self.folder / LOCK_INFO_FILE, json.dumps(self.info) + "\n")
        except BaseException:
            self.release()
            raise
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            (self.folder / LOCK_INFO_FILE).unlink(missing_ok=True)  # ours: we hold the lock
        finally:
            try:
                _unlock(fd)
            finally:
                os.close(fd)

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


# --- resuming ----------------------------------------------------------------------------------------


def run_identity(
    config_sha256: str | Sequence[str], dataset_sha256: str | None, prompt_hashes: Mapping[str, str]
) -> dict:
    """What decides whether earlier records belong to this run: config, dataset bytes, prompts.

    ``config_sha256`` may be several fingerprints (``eval.config.config_fingerprints``): the current
    one first, then those of older fingerprint versions that earlier runs of the same config hold.

    >>> run_identity(["a", "b"], None, {})["config_sha256_also"]
    ('b',)
    """
    fps = (config_sha256,) if isinstance(config_sha256, str) else tuple(config_sha256)
    out = {"config_sha256": fps[0], "dataset_sha256": dataset_sha256, "prompt_hashes": dict(prompt_hashes)}
    if fps[1:]:
        out["config_sha256_also"] = fps[1:]
    return out


def manifest_identity(manifest: Mapping) -> dict:
    """The run_identity a manifest recorded (None for what an older or damaged manifest lacks)."""
    return {
        "config_sha256": manifest.get("config_sha256"),
        "dataset_sha256": (manifest.get("dataset") or {}).get("sha256"),
        "prompt_hashes": manifest.get("prompt_hashes"),
    }


def _short(h: Any) -> str:
    return str(h)[:12] if h not in (None, "") else repr(h)


UNKNOWN = "unknown (not in the manifest)"


def identity_changes(old: Mapping, new: Mapping) -> list[str]:
    """What changed from `old` to `new` (run_identity dicts), as 'what: old -> new' with short hashes.

    Only keys present in `new` are compared. A value the old manifest lacks (None: an older
    or edited manifest) is unknown, and unknown never matches: it is a change, so the records
    are refused like those of another dataset (``resume`` raises ResumeMismatchError; ``--force-new``
    sets them aside). A prompt added to the package since is no change (no earlier record can
    have used it).

    >>> identity_changes(run_identity("a" * 64, "b" * 64, {"answer": "c" * 64, "old": "d" * 64}),
    ...                  run_identity("a" * 64, "e" * 64, {"answer": "f" * 64, "new": "0" * 64}))
    ['dataset sha256: bbbbbbbbbbbb -> eeeeeeeeeeee', 'prompt answer: cccccccccccc -> ffffffffffff', \
'prompt old: removed (was dddddddddddd)']
    >>> identity_changes({"config_sha256": "b" * 64, "prompt_hashes": {}}, run_identity(["a" * 64, "b" * 64], None, {}))
    []
    >>> identity_changes({"config_sha256": "a" * 64}, run_identity("a" * 64, "e" * 64, {}))
    ['dataset sha256: unknown (not in the manifest) -> eeeeeeeeeeee', 'prompt hashes: unknown (not in the manifest)']
    """
    out = []
    if "config_sha256" in new and old.get("config_sha256") not in (
        new["config_sha256"],
        *new.get("config_sha256_also", ()),
    ):
        was = UNKNOWN if old.get("config_sha256") is None else _short(old["config_sha256"])
        out.append(f"config_sha256: {was} -> {_short(new['config_sha256'])}")
    if "dataset_sha256" in new and old.get("dataset_sha256") != new["dataset_sha256"]:
        was = UNKNOWN if old.get("dataset_sha256") is None else _short(old["dataset_sha256"])
        out.append(f"dataset sha256: {was} -> {_short(new['dataset_sha256'])}")
    op, np_ = old.get("prompt_hashes"), new.get("prompt_hashes")
    if "prompt_hashes" in new and not isinstance(op, Mapping):
        out.append(f"prompt hashes: {UNKNOWN}")
    elif "prompt_hashes" in new and op != np_:
        np_ = np_ or {}
        for name in sorted(set(op) | set(np_)):
            if name not in np_:
                out.append(f"prompt {name}: removed (was {_short(op[name])})")
            elif name not in op:
                continue  # added since: no earlier record used it
            elif op[name] != np_[name]:
                out.append(f"prompt {name}: {_short(op[name])} -> {_short(np_[name])}")
    return out


def set_aside(out: Path) -> Path | None:
    """Move the results of `out` (records, errors, summary, windows) into ``out/previous-<UTC time>/``
    (``lazymem.sweep.set_aside``), with a copy of the manifest; never deletes anything. Returns that
    folder (None: nothing to move)."""
    from lazymem.sweep import set_aside as move_aside

    dest = move_aside(out, RESULT_FILES)
    if dest is not None and (out / MANIFEST_FILE).exists():
        shutil.copy2(out / MANIFEST_FILE, dest / MANIFEST_FILE)
        fsync_dir(dest)
    return dest


def resume(
    out: Path, identity: Mapping | str, old_manifest: Mapping | None, masker: Masker
) -> tuple[list[RunRecord], bool]:
    """Earlier ok records of `out` (one per question) and whether a cut-off last line was dropped.

    The records file is rewritten to hold exactly those; error records (to be redone) move to
    errors.jsonl. Records made with another config, dataset or prompts than `identity`
    (a run_identity; a bare string is a config fingerprint) raise ResumeMismatchError, records
    without a manifest UnmanifestedRecordsError, and records of runs the manifest does not list
    ForeignRecordError (``check_run_folder``), instead of mixing two runs.
    """
    records_path, errors_path = out / RECORDS_FILE, out / ERRORS_FILE
    if isinstance(identity, str):
        identity = {"config_sha256": identity}
    if not old_manifest and records_path.exists() and records_path.stat().st_size > 0:
        raise UnmanifestedRecordsError(out)
    existing, truncated = load_records(records_path)
    check_run_folder(out, old_manifest, existing, identity)
    # Keep one line per question: its ok record. Error records (to redo) move to errors.jsonl.
    latest = latest_records(existing)
    kept = [r for r in latest.values() if r.ok]
    stale = [r for r in existing if not r.ok]
    if truncated or stale or len(kept) != len(existing):
        if stale:
            with open(errors_path, "a", encoding="utf-8") as f:
                append_synced(f, "".join(masker.dumps(r.to_json()) + "\n" for r in stale))
        write_atomic(records_path, "".join(masker.dumps(r.to_json()) + "\n" for r in kept))
    return kept, truncated
