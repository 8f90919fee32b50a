"""Verbatim, append-only memory store per user, with deletion (the paper's ethics section).

LazyMem does no work at write time: messages are stored exactly as sent. Each user's
history is one JSON-lines file under ``root/users/``; appends only add lines. Deletion of
a message, a session or a whole user rewrites that file without the deleted rows
(atomically: temp file, fsync, rename), so the text is really gone from disk, and then
tells every subscriber (embedding caches, retrieval indices) which message ids and text
hashes were deleted so they can drop what they derived from them. An audit log records
what was deleted and when, never the text.

Deletion is atomic from the user's view. ``deletions.log`` holds one JSON line per deletion:
``{"id", "time", "user_id", "scope", "target", "message_ids", "text_hashes", "status"}``
(sha256 hashes only, never text). The line is written with ``"status": "pending"`` before the
file is rewritten and set to ``"complete"`` (with ``"completed"``, a time) once every
subscriber has returned (``"aborted"`` when the rewrite itself failed and nothing was
deleted). Status changes rewrite the log atomically; one process writes a store at a time.
Every subscriber is called even when an earlier one raises; the failures are raised together
afterwards as ``DeletionIncomplete``. The deletion then stays pending: calling the same delete
again (same message id, session id or user) re-runs the subscribers for the recorded hashes
instead of raising ``KeyError``, and ``complete_pending()`` does so for every pending deletion
(call it at startup, after the retriever has subscribed).

The store also keeps tombstones (``tombstones.txt``: hashes only) of deleted texts that no
surviving message of that user still has; ``is_deleted(hash)`` answers from them, so an
embedding cache built with ``is_deleted=store.is_deleted`` refuses to write rows for deleted
text even when someone retrieves on a ``History`` taken before the deletion. Appending the
same text again lifts its tombstone.

>>> import tempfile
>>> store = MemoryStore(tempfile.mkdtemp())
>>> _ = store.append("alice", "s1", "user", "I adopted a cat named Miso.", "2024/01/02 (Tue) 10:00")
>>> _ = store.append("alice", "s1", "assistant", "Congratulations on Miso!", "2024/01/02 (Tue) 10:00")
>>> len(store.history("alice"))
2
>>> store.delete_session("alice", "s1").message_ids
('alice:0', 'alice:1')
>>> len(store.history("alice"))
0
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

from lazymem.data.deletions import (  # noqa: F401  (Deletion, DeletionIncomplete: the store's API)
    Deletion,
    DeletionIncomplete,
    read_log_lines,
    subscriber_name,
)
from lazymem.errors import LoadError
from lazymem.files import write_jsonl, write_lines_atomic
from lazymem.records import History, Message
from lazymem.text import text_hash

_USER_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


class MemoryStore:
    """Append-only verbatim store; `history(user)` gives the History every stage reads."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        (self.root / "users").mkdir(parents=True, exist_ok=True)
        self._subscribers: list[Callable[[Deletion], None]] = []
        self._tombstones: set[str] = set()
        if self._tombstone_path.exists():
            self._tombstones = {line.strip() for line in self._tombstone_path.read_text().splitlines() if line.strip()}

    # ---- writing -------------------------------------------------------------------
    def append(self, user_id: str, session_id: str, role: str, text: str, timestamp: str = "") -> str:
        """Store one message verbatim; returns its id "<user>:<seq>"."""
        return self.extend(user_id, [(session_id, role, text, timestamp)])[0]

    def extend(self, user_id: str, rows: Iterable[tuple[str, str, str, str]]) -> list[str]:
        """Store many (session_id, role, text, timestamp) rows in one append."""
        path = self._path(user_id)
        seq = self._next_seq(user_id)
        lines, ids, revived = [], [], set()
        for i, (session_id, role, text, timestamp) in enumerate(rows):
            for name, value in (("session_id", session_id), ("role", role), ("text", text), ("timestamp", timestamp)):
                if not isinstance(value, str):
                    raise TypeError(
                        f"row {i} of append for user {user_id!r}: {name} must be str, got {type(value).__name__}"
                    )
            lines.append(
                json.dumps(
                    {"seq": seq, "session_id": session_id, "role": role, "text": text, "timestamp": timestamp},
                    ensure_ascii=False,
                )
            )
            ids.append(f"{user_id}:{seq}")
            seq += 1
            if self._tombstones:
                h = text_hash(text)
                if h in self._tombstones:
                    revived.add(h)
        if lines:
            with open(path, "a", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
                f.flush()
                os.fsync(f.fileno())
            self._meta_path(user_id).write_text(json.dumps({"next_seq": seq}))
        if revived:  # the text is stored again: caches may keep its rows
            self._tombstones -= revived
            self._write_tombstones()
        return ids

    def import_history(self, user_id: str, history: History) -> list[str]:
        """Append every message of a loaded History (e.g. a LongMemEval haystack)."""
        return self.extend(user_id, ((m.session_id, m.role, m.text, m.timestamp) for m in history))

    # ---- reading -------------------------------------------------------------------
    def users(self) -> list[str]:
        """User ids with a history file, sorted."""
        return sorted(p.stem for p in (self.root / "users").glob("*.jsonl"))

    def history(self, user_id: str) -> History:
        """The user's current history; positions are 0..n-1 over the surviving messages."""
        messages = []
        for pos, row in enumerate(self._rows(user_id)):
            messages.append(
                Message(
                    pos=pos,
                    id=f"{user_id}:{row['seq']}",
                    session_id=row["session_id"],
                    turn=0,
                    role=row["role"],
                    text=row["text"],
                    timestamp=row["timestamp"],
                )
            )
        # turn = index within the session, in stored order
        turns: dict[str, int] = {}
        fixed = []
        for m in messages:
            t = turns.get(m.session_id, 0)
            turns[m.session_id] = t + 1
            fixed.append(Message(**{**m.__dict__, "turn": t}))
        return History(id=user_id, messages=tuple(fixed))

    # ---- deleting ------------------------------------------------------------------
    def subscribe(self, callback: Callable[[Deletion], None]) -> None:
        """Call `callback(deletion)` after every delete (caches purge derived data there)."""
        self._subscribers.append(callback)

    def delete_message(self, user_id: str, message_id: str) -> Deletion:
        """Delete one message by id ("<user>:<seq>"); KeyError if it does not exist.

        When it is already gone but its deletion is pending (a subscriber failed), this
        finishes that deletion instead. Raises DeletionIncomplete when a subscriber fails.
        """
        deletion = self._delete(user_id, "message", message_id, lambda r: f"{user_id}:{r['seq']}" == message_id)
        if deletion is None:
            deletion = self._retry(user_id, lambda e: message_id in e["message_ids"])
        if deletion is None:
            raise KeyError(f"no message {message_id!r} in the history of user {user_id!r}")
        return deletion

    def delete_session(self, user_id: str, session_id: str) -> Deletion:
        """Delete every message of one session; KeyError if the session has none (and no pending deletion)."""
        deletion = self._delete(user_id, "session", session_id, lambda r: r["session_id"] == session_id)
        if deletion is None:
            deletion = self._retry(user_id, lambda e: e["scope"] == "session" and e.get("target") == session_id)
        if deletion is None:
            raise KeyError(f"no session {session_id!r} in the history of user {user_id!r}")
        return deletion

    def delete_user(self, user_id: str) -> Deletion:
        """Delete a user's whole history (files included); finishes the user's pending deletions too."""
        self._path(user_id)  # validates the id
        try:
            deletion = self._delete(user_id, "user", None, lambda r: True)
        finally:
            if not self._rows(user_id):
                self._path(user_id).unlink(missing_ok=True)
                self._meta_path(user_id).unlink(missing_ok=True)
        if deletion is None:
            deletion = self._retry(user_id, lambda e: True, all_of_them=True)
        return deletion or Deletion(user_id=user_id, scope="user", message_ids=(), text_hashes=())

    def is_deleted(self, text_hash: str) -> bool:
        """Whether this text hash was deleted and no message of its user has that text (a tombstone).

        Pass it to caches (``EmbeddingCache(..., is_deleted=store.is_deleted)``) so they never
        store rows for deleted text, e.g. when retrieving on a History taken before the delete.
        """
        return text_hash in self._tombstones

    def tombstones(self) -> frozenset[str]:
        """Text hashes of deleted texts (see ``is_deleted``)."""
        return frozenset(self._tombstones)

    def pending(self) -> list[Deletion]:
        """Deletions whose subscribers have not all succeeded yet, oldest first."""
        return [self._deletion(e) for e in self._log_entries() if e.get("status") == "pending"]

    def complete_pending(self) -> list[Deletion]:
        """Re-notify subscribers of every pending deletion (e.g. at startup); returns those completed.

        Raises DeletionIncomplete (after trying all of them) when a subscriber still fails.
        """
        done, failures, first = [], [], None
        for entry in self._log_entries():
            if entry.get("status") != "pending":
                continue
            deletion, errs = self._finish(entry)
            if errs:
                failures += errs
                first = first or deletion
            else:
                done.append(deletion)
        if failures:
            raise DeletionIncomplete(first, failures) from failures[0][2]
        return done

    # ---- internals -----------------------------------------------------------------
    def _path(self, user_id: str) -> Path:
        if not isinstance(user_id, str) or not _USER_ID.match(user_id):
            raise ValueError(f"user id {user_id!r} must be 1-128 characters of letters, digits, '_', '.', '-'")
        return self.root / "users" / f"{user_id}.jsonl"

    def _meta_path(self, user_id: str) -> Path:
        return self.root / "users" / f"{user_id}.meta.json"

    def _next_seq(self, user_id: str) -> int:
        meta = self._meta_path(user_id)
        if meta.exists():
            return json.loads(meta.read_text())["next_seq"]
        rows = self._rows(user_id)
        return rows[-1]["seq"] + 1 if rows else 0

    def _rows(self, user_id: str) -> list[dict]:
        path = self._path(user_id)
        if not path.exists():
            return []
        rows = []
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    raise LoadError(
                        str(path), f"line {lineno}", None, f"not valid JSON ({e.msg} at column {e.colno})"
                    ) from None
                for key in ("seq", "session_id", "role", "text", "timestamp"):
                    if key not in row:
                        raise LoadError(str(path), f"line {lineno}", key, "missing")
                rows.append(row)
        return rows

    @property
    def _log_path(self) -> Path:
        return self.root / "deletions.log"

    @property
    def _tombstone_path(self) -> Path:
        return self.root / "tombstones.txt"

    def _write_tombstones(self) -> None:
        write_lines_atomic(self._tombstone_path, sorted(self._tombstones))

    def _log_lines(self) -> list[tuple[str, dict | None]]:
        return read_log_lines(self._log_path)

    def _log_entries(self) -> list[dict]:
        return [e for _, e in self._log_lines() if isinstance(e, dict)]

    def _set_status(self, deletion_id: str, status: str) -> None:
        """Rewrite the audit log (atomically) with one record's status changed (other lines kept as they are)."""
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        lines = []
        for raw, e in self._log_lines():
            if isinstance(e, dict) and e.get("id") == deletion_id:
                e["status"] = status
                if status == "complete":
                    e["completed"] = now
                raw = json.dumps(e)
            lines.append(raw)
        write_lines_atomic(self._log_path, lines)

    @staticmethod
    def _deletion(entry: dict) -> Deletion:
        return Deletion(
            user_id=entry["user_id"],
            scope=entry["scope"],
            message_ids=tuple(entry["message_ids"]),
            text_hashes=tuple(entry.get("text_hashes", ())),
            id=entry.get("id", ""),
            target=entry.get("target"),
        )

    def _rewrite(self, user_id: str, keep: list[dict]) -> None:
        write_jsonl(self._path(user_id), keep)

    def _tombstone(self, deletion: Deletion, surviving_rows: list[dict]) -> None:
        """Record the deleted hashes that no surviving message of the user still has."""
        dead = set(deletion.text_hashes) - {text_hash(r["text"]) for r in surviving_rows}
        if not dead <= self._tombstones:
            self._tombstones |= dead
            self._write_tombstones()

    def _notify(self, deletion: Deletion) -> list[tuple[str, str, BaseException]]:
        """Call every subscriber, even after one raises; returns the failures."""
        failures = []
        for i, callback in enumerate(list(self._subscribers)):
            try:
                callback(deletion)
            except Exception as e:  # noqa: BLE001 - collected and raised together by the caller
                failures.append((deletion.id, subscriber_name(i, callback), e))
        return failures

    def _finish(self, entry: dict) -> tuple[Deletion, list]:
        """Remove any rows of a pending record still on disk (a crash before the rewrite), notify, mark."""
        deletion = self._deletion(entry)
        # id -> recorded hash: a row is removed only when both match (ids restart after delete_user).
        recorded = dict(zip(deletion.message_ids, deletion.text_hashes))
        rows = self._rows(deletion.user_id)
        keep = [r for r in rows if recorded.get(f"{deletion.user_id}:{r['seq']}") != text_hash(r["text"])]
        if len(keep) != len(rows):
            self._rewrite(deletion.user_id, keep)
        self._tombstone(deletion, keep)
        failures = self._notify(deletion)
        if not failures:
            self._set_status(deletion.id, "complete")
        return deletion, failures

    def _retry(self, user_id: str, match: Callable[[dict], bool], all_of_them: bool = False) -> Deletion | None:
        """Finish the pending deletion(s) of this user that match; None when there is none."""
        found = [
            e for e in self._log_entries() if e.get("status") == "pending" and e.get("user_id") == user_id and match(e)
        ]
        if not found:
            return None
        failures, result = [], None
        for entry in found if all_of_them else found[-1:]:
            deletion, errs = self._finish(entry)
            failures += errs
            result = result or deletion
        if failures:
            raise DeletionIncomplete(result, failures) from failures[0][2]
        return result

    def _delete(self, user_id: str, scope: str, target: str | None, match: Callable[[dict], bool]) -> Deletion | None:
        """Delete matching rows: log (pending), rewrite, tombstone, notify, log (complete). None if none match."""
        rows = self._rows(user_id)
        gone = [r for r in rows if match(r)]
        if not gone:
            return None
        keep = [r for r in rows if not match(r)]
        deletion = Deletion(
            user_id=user_id,
            scope=scope,
            message_ids=tuple(f"{user_id}:{r['seq']}" for r in gone),
            text_hashes=tuple(text_hash(r["text"]) for r in gone),
            id=uuid.uuid4().hex[:16],
            target=target,
        )
        # The record (hashes, no text) first: a crash after this leaves a pending deletion to finish.
        with open(self._log_path, "a", encoding="utf-8") as f:
            f.write(
                json.dumps(
                    {
                        "id": deletion.id,
                        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "user_id": user_id,
                        "scope": scope,
                        "target": target,
                        "message_ids": list(deletion.message_ids),
                        "text_hashes": list(deletion.text_hashes),
                        "status": "pending",
                    }
                )
                + "\n"
            )
            f.flush()
            os.fsync(f.fileno())
        try:
            self._rewrite(user_id, keep)
        except BaseException:
            self._set_status(deletion.id, "aborted")  # nothing was deleted; the rows are still there
            raise
        self._tombstone(deletion, keep)
        failures = self._notify(deletion)
        if failures:
            raise DeletionIncomplete(deletion, failures) from failures[0][2]
        self._set_status(deletion.id, "complete")
        return deletion
