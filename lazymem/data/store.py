"""Verbatim, append-only memory store per user, with deletion (the paper's ethics section).

LazyMem does no work at write time: messages are stored exactly as sent. Each user's
history is one JSON-lines file under ``root/users/``; appends only add lines. Deletion of
a message, a session or a whole user rewrites that file without the deleted rows
(atomically: temp file, fsync, rename), so the text is really gone from disk, and then
tells every subscriber (embedding caches, retrieval indices) which message ids and text
hashes were deleted so they can drop what they derived from them. An audit log records
what was deleted and when, never the text.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from lazymem.errors import LoadError
from lazymem.records import History, Message
from lazymem.text import text_hash

_USER_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


@dataclass(frozen=True)
class Deletion:
    """What a delete call removed; sent to every subscriber."""

    user_id: str  # whose history
    scope: str  # "message", "session" or "user"
    message_ids: tuple[str, ...]  # ids of the removed messages ("<user>:<seq>")
    text_hashes: tuple[str, ...]  # sha256 of their texts (cache keys)


class MemoryStore:
    """Append-only verbatim store; `history(user)` gives the History every stage reads."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        (self.root / "users").mkdir(parents=True, exist_ok=True)
        self._subscribers: list[Callable[[Deletion], None]] = []

    # ---- writing -------------------------------------------------------------------
    def append(self, user_id: str, session_id: str, role: str, text: str, timestamp: str = "") -> str:
        """Store one message verbatim; returns its id "<user>:<seq>"."""
        return self.extend(user_id, [(session_id, role, text, timestamp)])[0]

    def extend(self, user_id: str, rows: Iterable[tuple[str, str, str, str]]) -> list[str]:
        """Store many (session_id, role, text, timestamp) rows in one append."""
        path = self._path(user_id)
        seq = self._next_seq(user_id)
        lines, ids = [], []
        for i, (session_id, role, text, timestamp) in enumerate(rows):
            for name, value in (("session_id", session_id), ("role", role), ("text", text), ("timestamp", timestamp)):
                if not isinstance(value, str):
                    raise TypeError(f"row {i} of append for user {user_id!r}: {name} must be str, got {type(value).__name__}")
            lines.append(json.dumps({"seq": seq, "session_id": session_id, "role": role, "text": text,
                                     "timestamp": timestamp}, ensure_ascii=False))
            ids.append(f"{user_id}:{seq}")
            seq += 1
        if lines:
            with open(path, "a", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
                f.flush()
                os.fsync(f.fileno())
            self._meta_path(user_id).write_text(json.dumps({"next_seq": seq}))
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
            messages.append(Message(pos=pos, id=f"{user_id}:{row['seq']}", session_id=row["session_id"],
                                    turn=0, role=row["role"], text=row["text"], timestamp=row["timestamp"]))
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
        """Delete one message by id ("<user>:<seq>"); KeyError if it does not exist."""
        deletion = self._delete(user_id, "message", lambda r: f"{user_id}:{r['seq']}" == message_id)
        if not deletion.message_ids:
            raise KeyError(f"no message {message_id!r} in the history of user {user_id!r}")
        return deletion

    def delete_session(self, user_id: str, session_id: str) -> Deletion:
        """Delete every message of one session; KeyError if the session has none."""
        deletion = self._delete(user_id, "session", lambda r: r["session_id"] == session_id)
        if not deletion.message_ids:
            raise KeyError(f"no session {session_id!r} in the history of user {user_id!r}")
        return deletion

    def delete_user(self, user_id: str) -> Deletion:
        """Delete a user's whole history (files included)."""
        deletion = self._delete(user_id, "user", lambda r: True)
        self._path(user_id).unlink(missing_ok=True)
        self._meta_path(user_id).unlink(missing_ok=True)
        return deletion

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
                    raise LoadError(str(path), f"line {lineno}", None, f"not valid JSON ({e.msg} at column {e.colno})") from None
                for key in ("seq", "session_id", "role", "text", "timestamp"):
                    if key not in row:
                        raise LoadError(str(path), f"line {lineno}", key, "missing")
                rows.append(row)
        return rows

    def _delete(self, user_id: str, scope: str, match: Callable[[dict], bool]) -> Deletion:
        rows = self._rows(user_id)
        gone = [r for r in rows if match(r)]
        keep = [r for r in rows if not match(r)]
        if gone and scope != "user":
            path = self._path(user_id)
            tmp = path.with_suffix(".jsonl.tmp")
            with open(tmp, "w", encoding="utf-8") as f:
                f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in keep)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        deletion = Deletion(user_id=user_id, scope=scope,
                            message_ids=tuple(f"{user_id}:{r['seq']}" for r in gone),
                            text_hashes=tuple(text_hash(r["text"]) for r in gone))
        if gone:
            with open(self.root / "deletions.log", "a", encoding="utf-8") as f:
                f.write(json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "user_id": user_id,
                                    "scope": scope, "message_ids": list(deletion.message_ids)}) + "\n")
            for callback in self._subscribers:
                callback(deletion)
        return deletion
