"""The files of a run folder: their names, crash-safe reading and writing, secret masking, and resuming.

A run folder holds ``records.jsonl`` (one line per question, appended and fsynced as each
finishes), ``errors.jsonl`` (error records that a rerun redid), ``summary.json``,
``manifest.json`` and ``windows.jsonl`` (one line per window, for the window explorer).

>>> latest_records([{"question_id": "a", "status": "error"}, {"question_id": "b"},
...                 {"question_id": "a", "status": "ok"}])["a"]["status"]
'ok'
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping

from lazymem.errors import ConfigError
from lazymem.secrets import Masker

if TYPE_CHECKING:
    from lazymem.llm import LLMConfig

RECORDS_FILE = "records.jsonl"
ERRORS_FILE = "errors.jsonl"
SUMMARY_FILE = "summary.json"
MANIFEST_FILE = "manifest.json"
WINDOWS_FILE = "windows.jsonl"  # read by lazymem.notebooks.load_window_records
RESULT_FILES = (RECORDS_FILE, ERRORS_FILE, SUMMARY_FILE, WINDOWS_FILE)  # what overwrite=True discards


# --- reading ----------------------------------------------------------------------------------------


def read_records(path: str | os.PathLike) -> tuple[list[dict], bool]:
    """Records of a records.jsonl and whether its last line was cut off (and is left out).

    Only the last line may be incomplete (an append interrupted by a kill); a bad line
    anywhere else means the file was damaged otherwise, and raises rather than guessing.
    """
    p = Path(path)
    if not p.exists():
        return [], False
    data = p.read_bytes()
    lines = data.split(b"\n")
    records, truncated = [], False
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        last = i == len(lines) - 1 or all(not x.strip() for x in lines[i + 1:])
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict) or "question_id" not in rec:
                raise ValueError("not a question record")
        except (ValueError, UnicodeDecodeError) as e:
            if last:
                truncated = True
                break
            raise ValueError(f"{p}: line {i + 1} is not a question record ({e}); only a cut-off last line "
                             "is repaired automatically") from None
        if last and not data.endswith(b"\n"):
            truncated = True  # parsed, yet the newline never made it: treat as unfinished
            break
        records.append(rec)
    return records, truncated


def latest_records(records: Iterable[dict]) -> dict[str, dict]:
    """The last record of every question id, in order of first appearance."""
    out: dict[str, dict] = {}
    for r in records:
        out[r["question_id"]] = r
    return out


def read_json(path: str | os.PathLike) -> dict | None:
    """A JSON file's content, or None when it is missing or unreadable."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """The readable lines of a JSON-lines file (bad lines skipped; [] when missing)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def window_lines(records: Iterable[dict]) -> list[dict]:
    """Per-window lines for the window explorer (lazymem.notebooks.load_window_records)."""
    out = []
    for r in latest_records(records).values():
        if r["status"] != "ok":
            continue
        for i, w in enumerate(r.get("windows") or ()):
            line = {"question_id": r["question_id"], "positions": w["positions"], "hits": w["hits"],
                    "gold": w["gold"], "merged_id": w["merged_id"], "sub_id": w["sub_id"],
                    "verdict": w["verdict"], "decisions": w["decisions"]}
            if i == 0:
                line.update(memory=r["memory"], answer=r["answer"], judge=r.get("judge"))
            out.append(line)
    return out


# --- writing ----------------------------------------------------------------------------------------


def secret_masker(llm_configs: Iterable["LLMConfig | None"]) -> Masker:
    """A Masker for the API keys the models would read (belt and braces: none should be in a record).

    The values are those of each model's ``api_key_env`` variable, except "EMPTY" (the
    placeholder of local servers) and values under 6 characters.
    """
    values = [os.environ.get(c.api_key_env, "") for c in llm_configs if c is not None]
    return Masker([v for v in values if v != "EMPTY"], min_len=6)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(str(path), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Replace `path` with `text` all at once (a temporary file, fsynced, then renamed)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def append_synced(f, text: str) -> None:
    """Write `text` to an open file and force it to disk (a kill -9 after this loses nothing)."""
    f.write(text)
    f.flush()
    os.fsync(f.fileno())


def discard_results(out: Path) -> None:
    """Delete the records, errors, summary and windows of a run folder (the manifest stays)."""
    for name in RESULT_FILES:
        (out / name).unlink(missing_ok=True)


def resume(out: Path, fingerprint: str, old_manifest: Mapping | None, masker: Masker) -> tuple[list[dict], bool]:
    """Earlier ok records of `out` (one per question) and whether a cut-off last line was dropped.

    The records file is rewritten to hold exactly those; error records (to be redone) move to
    errors.jsonl. Records of another configuration raise instead of mixing two runs.
    """
    records_path, errors_path = out / RECORDS_FILE, out / ERRORS_FILE
    existing, truncated = read_records(records_path)
    if existing and old_manifest and old_manifest.get("config_sha256") not in (None, fingerprint):
        raise ConfigError(
            f"{out} holds records of a different configuration (config_sha256 {old_manifest['config_sha256'][:12]} "
            f"!= {fingerprint[:12]}); use another output folder or overwrite=True (--overwrite)")
    # Keep one line per question: its ok record. Error records (to redo) move to errors.jsonl.
    latest = latest_records(existing)
    kept = [r for r in latest.values() if r["status"] == "ok"]
    stale = [r for r in existing if r["status"] != "ok"]
    if truncated or stale or len(kept) != len(existing):
        if stale:
            with open(errors_path, "a", encoding="utf-8") as f:
                append_synced(f, "".join(masker.dumps(r) + "\n" for r in stale))
        write_atomic(records_path, "".join(masker.dumps(r) + "\n" for r in kept))
    return kept, truncated
