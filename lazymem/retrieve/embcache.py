"""Embeddings on disk: one matrix per history, one small file per query (``EmbeddingCache``).

The cache keeps one matrix per history (``<root>/<namespace>/<key>.npy``, rows in message
order) beside the sha256 of each row's text (``<key>.hashes.npy``) and a small JSON note.
A history seen before loads in one ``np.load``; a changed history reuses every row whose
text hash is stored under any key and encodes only the rest. Query vectors are kept too, one
small file per query text (``embed_query``), so a rerun over the same questions and histories
encodes nothing and never loads the model. ``purge`` deletes given text
hashes from every matrix on disk (the verbatim store calls it when messages are deleted).

Deleted text is never written back: ``forbid(hashes)`` (``Retriever.purge`` calls it) and the
optional ``is_deleted`` callable (e.g. ``EmbeddingCache(root, is_deleted=store.is_deleted)``,
which survives restarts) name text hashes whose rows ``save`` drops. ``embed`` still returns
vectors for such texts, computed in memory for that call only, so retrieval on a ``History``
taken before a deletion works but leaves nothing of the deleted text on disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lazymem.paths import cache_root
from lazymem.text import text_hash

if TYPE_CHECKING:
    from lazymem.retrieve.dense import DenseEncoder


def default_cache_dir() -> Path:
    """``$LAZYMEM_CACHE/embeddings`` when the variable is set, else ~/.cache/lazymem/embeddings."""
    return cache_root() / "embeddings"


def _atomic_save(path: Path, array: np.ndarray) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "wb") as f:
        np.save(f, array)
    os.replace(tmp, path)


class EmbeddingCache:
    """Per-history embedding matrices on disk, keyed by (model namespace, text sha256)."""

    def __init__(self, root: str | os.PathLike | None = None, is_deleted: Callable[[str], bool] | None = None):
        self.root = Path(root).expanduser() if root is not None else default_cache_dir()
        if self.root.exists() and not self.root.is_dir():
            from lazymem.errors import ConfigError

            raise ConfigError(f"embedding cache_dir {self.root}: is a file, expected a directory")
        self.n_loaded = 0  # rows served from disk
        self.n_computed = 0  # rows encoded because no stored row had their text hash
        self.n_queries_loaded = 0  # query vectors served from disk
        self.n_queries_computed = 0  # query vectors encoded (then stored)
        self.n_refused = 0  # rows not written because their text was deleted
        # Text hash -> deleted? (e.g. MemoryStore.is_deleted); rows of deleted texts are never saved.
        self.is_deleted = is_deleted
        self._forbidden: set[str] = set()  # hashes purged through this object (kept for its lifetime)

    def forbid(self, text_hashes: Iterable[str]) -> None:
        """Never write rows for these text hashes again (through this object): they were deleted."""
        self._forbidden.update(h if isinstance(h, str) else h.decode() for h in text_hashes)

    def allow(self, text_hashes: Iterable[str]) -> None:
        """Undo ``forbid`` (e.g. the text was stored again)."""
        self._forbidden.difference_update(h if isinstance(h, str) else h.decode() for h in text_hashes)

    def blocked(self, text_hash: str) -> bool:
        """Whether rows for this text hash must not be written (forbidden here or deleted per is_deleted)."""
        return text_hash in self._forbidden or (self.is_deleted is not None and bool(self.is_deleted(text_hash)))

    def _dir(self, namespace: str) -> Path:
        return self.root / namespace

    def _paths(self, namespace: str, key: str) -> tuple[Path, Path, Path]:
        d = self._dir(namespace)
        return d / f"{key}.npy", d / f"{key}.hashes.npy", d / f"{key}.json"

    def keys(self, namespace: str) -> list[str]:
        """Keys (history fingerprints) with a stored matrix under this namespace."""
        d = self._dir(namespace)
        if not d.is_dir():
            return []
        return sorted(p.name[: -len(".hashes.npy")] for p in d.glob("*.hashes.npy"))

    def namespaces(self) -> list[str]:
        """Model namespaces present on disk."""
        return sorted(p.name for p in self.root.iterdir() if p.is_dir()) if self.root.is_dir() else []

    def load(self, namespace: str, key: str, hashes: Sequence[str] | None = None) -> np.ndarray | None:
        """The stored matrix for key, or None when absent or (given hashes) not row-for-row equal."""
        mat_p, hash_p, _ = self._paths(namespace, key)
        try:
            stored = np.load(hash_p)
            mat = np.load(mat_p)
        except (FileNotFoundError, ValueError, EOFError):
            return None
        if len(stored) != len(mat):
            return None  # a writer died between the two files
        if hashes is not None and not np.array_equal(stored, np.asarray(hashes, dtype="S64")):
            return None
        return mat

    def info(self, namespace: str, key: str) -> dict:
        """The JSON note stored with a matrix ({} when absent): model, rows, dim, encode time."""
        try:
            return json.loads(self._paths(namespace, key)[2].read_text())
        except (FileNotFoundError, ValueError):
            return {}

    def save(
        self, namespace: str, key: str, hashes: Sequence[str], matrix: np.ndarray, note: dict | None = None
    ) -> None:
        """Store a matrix and its row hashes (atomically per file; the matrix first).

        Rows whose hash is ``blocked`` (deleted text) are left out of what is written.
        """
        if len(hashes) != len(matrix):
            raise ValueError(f"{len(hashes)} hashes for {len(matrix)} rows")
        hashes = [h if isinstance(h, str) else h.decode() for h in hashes]
        keep = [i for i, h in enumerate(hashes) if not self.blocked(h)]
        if len(keep) != len(hashes):
            self.n_refused += len(hashes) - len(keep)
            hashes, matrix = [hashes[i] for i in keep], np.asarray(matrix)[keep]
        mat_p, hash_p, info_p = self._paths(namespace, key)
        mat_p.parent.mkdir(parents=True, exist_ok=True)
        _atomic_save(mat_p, np.asarray(matrix, dtype=np.float32))
        _atomic_save(hash_p, np.asarray(hashes, dtype="S64"))
        info_p.write_text(
            json.dumps(
                {"rows": len(hashes), "dim": int(matrix.shape[1]) if matrix.ndim == 2 else 0, **(note or {})}, indent=1
            )
        )

    def _stored_rows(self, namespace: str, wanted: set[bytes]) -> dict[bytes, np.ndarray]:
        """Rows for the wanted hashes found under any key of the namespace."""
        found: dict[bytes, np.ndarray] = {}
        for key in self.keys(namespace):
            if len(found) == len(wanted):
                break
            mat_p, hash_p, _ = self._paths(namespace, key)
            try:
                stored = np.load(hash_p)
                mat = np.load(mat_p, mmap_mode="r")
            except (FileNotFoundError, ValueError, EOFError):
                continue
            if len(stored) != len(mat):
                continue
            for row in np.flatnonzero(np.isin(stored, list(wanted))):
                h = stored[row].tobytes()
                if h not in found:
                    found[h] = np.array(mat[row])
        return found

    def embed(
        self,
        encoder: DenseEncoder,
        texts: Sequence[str],
        key: str,
        hashes: Sequence[str] | None = None,
        progress: bool = False,
    ) -> np.ndarray:
        """Embeddings of texts (in order), from disk where possible; new rows are stored under key."""
        hashes = list(hashes) if hashes is not None else [text_hash(t) for t in texts]
        ns = encoder.namespace
        mat = self.load(ns, key, hashes)
        if mat is not None:
            self.n_loaded += len(mat)
            return mat
        wanted = {h.encode() for h in hashes}
        found = self._stored_rows(ns, wanted)
        missing = [i for i, h in enumerate(hashes) if h.encode() not in found]
        # Encode each distinct missing text once (chat histories repeat "ok", "thanks", ...).
        first: dict[str, int] = {}
        for i in missing:
            first.setdefault(hashes[i], i)
        t0 = time.perf_counter()
        # nothing new (every row stored under other keys): no encode, so no model load
        new = encoder.encode_docs([texts[i] for i in first.values()], progress=progress) if first else None
        encode_s = time.perf_counter() - t0
        for h, row in zip(first, new if new is not None else ()):
            found[h.encode()] = row
        dim = (
            new.shape[1]
            if new is not None and len(new)
            else next(iter(found.values())).shape[0]
            if found
            else encoder.dim
        )
        mat = np.zeros((len(hashes), dim), dtype=np.float32)
        for i, h in enumerate(hashes):
            mat[i] = found[h.encode()]
        self.n_loaded += len(hashes) - len(missing)
        self.n_computed += len(first)
        blocked = {h for h in first if self.blocked(h)}
        if not blocked or len(blocked) < len(first):
            # save() leaves out deleted texts' rows (e.g. a History taken before a deletion); when
            # only those were new, nothing is written (the others are already on disk).
            self.save(
                ns,
                key,
                hashes,
                mat,
                note={"model": encoder.model_name, "encoded": len(first), "encode_s": round(encode_s, 3)},
            )
        else:
            self.n_refused += len(blocked)
        return mat

    def _query_path(self, encoder: DenseEncoder, query: str) -> Path | None:
        ns = getattr(encoder, "query_namespace", None)  # an encoder without one: not cached
        h = text_hash(query)
        return self._dir(ns) / h[:2] / f"{h}.npy" if ns else None

    def embed_query(self, encoder: DenseEncoder, query: str) -> np.ndarray:
        """The query's unit vector: from disk when this model and query prompt encoded it before,
        else encoded and stored (``<root>/<model>-query<tag>/<hash[:2]>/<hash>.npy``; the text
        itself is not written)."""
        path = self._query_path(encoder, query)
        if path is None:
            return encoder.encode_queries([query])[0]
        try:
            vec = np.load(path)
            if vec.ndim == 1 and vec.dtype == np.float32:
                self.n_queries_loaded += 1
                return vec
        except (FileNotFoundError, ValueError, EOFError, OSError):
            pass  # absent or torn: encode again
        vec = encoder.encode_queries([query])[0]
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_save(path, vec)
        self.n_queries_computed += 1
        return vec

    def purge(self, text_hashes: Iterable[str], namespace: str | None = None) -> int:
        """Delete the rows of these texts from every stored matrix; returns rows removed."""
        gone = np.asarray(sorted({h if isinstance(h, str) else h.decode() for h in text_hashes}), dtype="S64")
        if not len(gone):
            return 0
        removed = 0
        for ns in [namespace] if namespace else self.namespaces():
            for key in self.keys(ns):
                mat_p, hash_p, _ = self._paths(ns, key)
                try:
                    stored = np.load(hash_p)
                except (FileNotFoundError, ValueError, EOFError):
                    continue
                hit = np.isin(stored, gone)
                if not hit.any():
                    continue
                keep = ~hit
                mat = np.load(mat_p)
                note = self.info(ns, key)
                self.save(ns, key, list(stored[keep].astype(str)), mat[keep], note={**note, "purged": int(hit.sum())})
                removed += int(hit.sum())
        return removed

    def purge_history(self, key: str, namespace: str | None = None) -> int:
        """Delete the matrix stored for one history key; returns files removed.

        Rows of the same texts stored under other keys stay: use ``purge`` to forget a text.
        """
        n = 0
        for ns in [namespace] if namespace else self.namespaces():
            for p in self._paths(ns, key):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
                    n += 1
        return n
