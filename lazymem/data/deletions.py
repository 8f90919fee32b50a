"""What a deletion from the verbatim store is: the record subscribers get, the error when some of
them fail, and reading the audit log (hashes, never text; written with ``lazymem.files.write_lines_atomic``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lazymem.files import read_jsonl


@dataclass(frozen=True)
class Deletion:
    """What a delete call removed; sent to every subscriber."""

    user_id: str  # whose history
    scope: str  # "message", "session" or "user"
    message_ids: tuple[str, ...]  # ids of the removed messages ("<user>:<seq>")
    text_hashes: tuple[str, ...]  # sha256 of their texts (cache keys)
    id: str = ""  # the audit-log record id (retries and complete_pending() reuse it)
    target: str | None = None  # the message id, session id, or None for a whole user


def subscriber_name(index: int, callback: Callable) -> str:
    name = getattr(callback, "__qualname__", None) or getattr(type(callback), "__qualname__", repr(callback))
    return f"subscriber #{index} ({name})"


class DeletionIncomplete(RuntimeError):
    """Some deletion subscribers raised; the others ran, and the deletion is recorded as pending.

    ``deletion``: the (first) incomplete Deletion; ``failures``: (deletion id, subscriber name,
    exception) for every failure. The text is already gone from the store; retry the same delete
    call or call ``store.complete_pending()`` to run the subscribers again for the recorded hashes.
    """

    def __init__(self, deletion: Deletion, failures: list[tuple[str, str, BaseException]]):
        self.deletion, self.failures = deletion, list(failures)
        what = "; ".join(
            f"{name} failed on deletion {did}: {type(exc).__name__}: {exc}" for did, name, exc in self.failures
        )
        super().__init__(
            f"deletion {deletion.id} ({deletion.scope} {deletion.target or deletion.user_id!r} of user "
            f"{deletion.user_id!r}) is incomplete: {what}. The text is gone from the store and the deletion is "
            f"recorded as pending in deletions.log (with its text hashes); every other subscriber ran. Retry the "
            f"same delete call or call store.complete_pending() once the cause is fixed."
        )


def read_log_lines(path: Path) -> list[tuple[str, dict]]:
    """(line, record) of each record of the audit log, read by ``lazymem.files.read_jsonl``.

    A torn last line (an append cut short by a crash, before anything was deleted) is left out,
    so the next rewrite drops it; a bad line anywhere else is a LoadError naming the log and line.
    The line is the record as written (``json.dumps``), for rewriting the log unchanged.
    """
    records, _ = read_jsonl(path, what="a deletion record")
    return [(json.dumps(r), r) for r in records]
