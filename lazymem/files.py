"""Files written all at once and files hashed: the one atomic writer and the one file hash.

``write_lines_atomic`` writes a temporary file beside the target, fsyncs it, renames it over
the target and fsyncs the folder, so a reader (or a crash) sees the old file or the new one,
never half of it. Run folders, the verbatim store, its audit log and training data use it.

>>> import tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "a.txt")
>>> write_lines_atomic(p, ["one", "two"])
2
>>> open(p).read(), sha256_file(p)[:12]
('one\\ntwo\\n', 'c3f9c8c283a2')
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterable


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fsync_dir(path: Path) -> None:
    """fsync a folder so a rename inside it survives a crash (a no-op where folders cannot be opened)."""
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


def write_lines_atomic(path: str | os.PathLike, lines: Iterable[str]) -> int:
    """Replace ``path`` with these lines, each ended by a newline, all at once; returns the line count."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    n = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
            n += 1
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)
    return n


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Replace ``path`` with ``text`` all at once (a temporary file, fsynced, then renamed)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)
