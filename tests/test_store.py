"""Verbatim append-only store with deletion."""

import json

import pytest

from lazymem.data import MemoryStore, text_hash
from lazymem.errors import LoadError


def _fill(store):
    store.append("u1", "s1", "user", "My sister Ana lives in Porto.", "2024/01/01 (Mon) 09:00")
    store.append("u1", "s1", "assistant", "Porto is lovely in spring.", "2024/01/01 (Mon) 09:00")
    store.append("u1", "s2", "user", "I switched jobs: I'm a nurse now.", "2024/02/01 (Thu) 09:00")
    store.append("u1", "s2", "assistant", "Congratulations on the new job!", "2024/02/01 (Thu) 09:00")


def test_verbatim_roundtrip_and_positions(tmp_path):
    store = MemoryStore(tmp_path)
    text = 'Quotes "x", unicode 東京, newline\nand JSON [{"op": "KEEP"}]'
    mid = store.append("u1", "s1", "user", text, "t0")
    h = store.history("u1")
    assert h[0].text == text and h[0].id == mid == "u1:0" and h[0].pos == 0
    _fill(store)
    h = store.history("u1")
    assert [m.pos for m in h] == list(range(5))
    assert [m.turn for m in h] == [0, 1, 2, 0, 1]  # turn within session, in stored order
    assert store.users() == ["u1"]


def test_delete_message_session_user_and_notify(tmp_path):
    store = MemoryStore(tmp_path)
    _fill(store)
    seen = []
    store.subscribe(seen.append)
    d = store.delete_message("u1", "u1:2")
    assert d.message_ids == ("u1:2",) and d.text_hashes == (text_hash("I switched jobs: I'm a nurse now."),)
    h = store.history("u1")
    assert [m.id for m in h] == ["u1:0", "u1:1", "u1:3"] and [m.pos for m in h] == [0, 1, 2]
    # the text is gone from disk, not just hidden
    assert "nurse" not in (tmp_path / "users" / "u1.jsonl").read_text()
    # ids are never reused after a delete
    assert store.append("u1", "s3", "user", "new", "t") == "u1:4"
    store.delete_session("u1", "s1")
    assert [m.session_id for m in store.history("u1")] == ["s2", "s3"]
    store.delete_user("u1")
    assert store.users() == [] and len(store.history("u1")) == 0
    assert [x.scope for x in seen] == ["message", "session", "user"]
    log = [json.loads(line) for line in (tmp_path / "deletions.log").read_text().splitlines()]
    assert [x["scope"] for x in log] == ["message", "session", "user"]
    assert "Porto" not in (tmp_path / "deletions.log").read_text()  # the audit log holds no text


def test_errors_name_what_is_wrong(tmp_path):
    store = MemoryStore(tmp_path)
    _fill(store)
    with pytest.raises(KeyError, match="no message 'u1:99'"):
        store.delete_message("u1", "u1:99")
    with pytest.raises(KeyError, match="no session 'nope'"):
        store.delete_session("u1", "nope")
    with pytest.raises(ValueError, match="user id"):
        store.append("../etc", "s", "user", "x")
    with pytest.raises(TypeError, match="text must be str"):
        store.append("u1", "s", "user", 3)
    path = tmp_path / "users" / "u1.jsonl"
    path.write_text(path.read_text() + '{"seq": 9, "session_id": "s"\n')
    with pytest.raises(LoadError, match=r"u1.jsonl: line 5: not valid JSON"):
        store.history("u1")


@pytest.mark.slow
def test_deletion_reaches_retrieval_index_and_embedding_cache(tmp_path):
    """A deleted message's text leaves the store, the in-memory index and the disk cache."""
    import numpy as np

    from lazymem.retrieve import RetrievalConfig, Retriever

    store = MemoryStore(tmp_path / "store")
    _fill(store)
    retriever = Retriever(RetrievalConfig(n=4, cache_dir=str(tmp_path / "emb")))
    store.subscribe(lambda d: retriever.purge(d.text_hashes))
    pool = retriever.retrieve(store.history("u1"), "Am I working as a nurse?")
    assert "nurse" in store.history("u1")[pool.positions[0]].text
    secret = text_hash("I switched jobs: I'm a nurse now.")

    def stored():
        return {h for f in (tmp_path / "emb").rglob("*.hashes.npy") for h in np.load(f).tolist()}

    assert any(secret.encode() == h or secret == h for h in stored())  # embedded and cached on disk

    store.delete_message("u1", "u1:2")
    assert not any(secret.encode() == h or secret == h for h in stored())  # purged from disk
    assert all(secret not in idx.text_hashes for idx in retriever._indexes.values())  # and from memory
    pool = retriever.retrieve(store.history("u1"), "Am I working as a nurse?")
    assert len(pool) == 3 and all("nurse" not in store.history("u1")[p].text for p in pool.positions)


# --- deletion is atomic from the user's view (hostile-input review, issue item 3) -----------------

NURSE = "I switched jobs: I'm a nurse now."


class _FakeEncoder:
    """Deterministic unit vectors from the text's sha256 (no model load); like tests/test_embed.py's."""

    model_name = "fake"
    namespace = "fake"
    dim = 8

    def __init__(self):
        self.n_texts_encoded = 0

    def encode_docs(self, texts, progress=False):
        import hashlib

        import numpy as np

        self.n_texts_encoded += len(texts)
        rows = [
            np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8).astype(np.float32) + 1 for t in texts
        ]
        m = np.array(rows, dtype=np.float32).reshape(len(texts), self.dim)
        return m / np.linalg.norm(m, axis=1, keepdims=True) if len(m) else m

    encode_queries = encode_docs


def _fake_retriever(emb_dir, **kw):
    from lazymem.retrieve import EmbeddingCache, RetrievalConfig, Retriever

    return Retriever(RetrievalConfig(n=4), cache=EmbeddingCache(emb_dir), encoder=_FakeEncoder(), **kw)


def _on_disk(emb_dir, text):
    """Whether the text's hash or its embedding row is in any cache file under emb_dir."""
    import numpy as np

    h = text_hash(text).encode()
    row = _FakeEncoder().encode_docs([text])[0]
    in_hashes = any(h in set(np.load(f).tolist()) for f in emb_dir.rglob("*.hashes.npy"))
    in_rows = any(
        np.isclose(np.load(f), row).all(axis=1).any()
        for f in emb_dir.rglob("*.npy")
        if not f.name.endswith(".hashes.npy") and np.load(f).size
    )
    return in_hashes or in_rows


def test_failing_subscriber_others_still_run_and_a_retry_completes_the_purge(tmp_path):
    from lazymem.data.store import DeletionIncomplete

    store = MemoryStore(tmp_path / "store")
    _fill(store)
    emb = tmp_path / "emb"
    retriever = _fake_retriever(emb)
    retriever.retrieve(store.history("u1"), "Am I working as a nurse?")
    assert _on_disk(emb, NURSE)
    down = [True]

    def flaky_purge(d):  # e.g. the embedding volume is briefly unavailable
        if down[0]:
            raise OSError("embedding volume unavailable")
        retriever.purge(d.text_hashes)

    seen = []
    store.subscribe(flaky_purge)
    store.subscribe(seen.append)
    with pytest.raises(
        DeletionIncomplete, match=r"(?s)flaky_purge.*embedding volume unavailable.*complete_pending"
    ) as e:
        store.delete_message("u1", "u1:2")
    assert [d.message_ids for d in seen] == [("u1:2",)]  # the later subscriber still ran
    assert e.value.deletion.text_hashes == (text_hash(NURSE),)
    assert "nurse" not in (tmp_path / "store" / "users" / "u1.jsonl").read_text()
    log_text = (tmp_path / "store" / "deletions.log").read_text()
    (entry,) = [json.loads(line) for line in log_text.splitlines()]
    assert entry["text_hashes"] == [text_hash(NURSE)] and entry["status"] == "pending"
    assert "nurse" not in log_text  # hashes only, never text
    assert [d.message_ids for d in store.pending()] == [("u1:2",)]
    assert _on_disk(emb, NURSE)  # the failed purge left the embedding behind ...

    down[0] = False
    d = store.delete_message("u1", "u1:2")  # ... and the retry is not a KeyError: it finishes the purge
    assert d.message_ids == ("u1:2",) and not _on_disk(emb, NURSE)
    assert json.loads((tmp_path / "store" / "deletions.log").read_text())["status"] == "complete"
    assert store.pending() == []
    with pytest.raises(KeyError, match="no message 'u1:2'"):  # nothing left to finish
        store.delete_message("u1", "u1:2")


def test_complete_pending_after_a_restart_and_session_retry(tmp_path):
    from lazymem.data.store import DeletionIncomplete

    store = MemoryStore(tmp_path / "store")
    _fill(store)
    emb = tmp_path / "emb"
    _fake_retriever(emb).retrieve(store.history("u1"), "Porto")
    assert _on_disk(emb, "Porto is lovely in spring.")

    def boom(d):
        raise RuntimeError("boom")

    store.subscribe(boom)
    with pytest.raises(DeletionIncomplete):
        store.delete_session("u1", "s1")
    with pytest.raises(DeletionIncomplete):  # a retry re-runs every subscriber; still failing, still pending
        store.delete_session("u1", "s1")
    # A new process: a fresh store finds the pending deletion in the audit log and finishes it.
    store2 = MemoryStore(tmp_path / "store")
    retriever = _fake_retriever(emb, is_deleted=store2.is_deleted)
    store2.subscribe(lambda d: retriever.purge(d.text_hashes))
    done = store2.complete_pending()
    assert [d.scope for d in done] == ["session"] and store2.pending() == []
    assert not _on_disk(emb, "Porto is lovely in spring.") and not _on_disk(emb, "My sister Ana lives in Porto.")
    assert _on_disk(emb, NURSE)  # other messages keep their rows
    assert store2.complete_pending() == []


def test_stale_history_cannot_resurrect_deleted_text_into_the_cache(tmp_path):
    store = MemoryStore(tmp_path / "store")
    _fill(store)
    emb = tmp_path / "emb"
    retriever = _fake_retriever(emb)
    store.subscribe(lambda d: retriever.purge(d.text_hashes))
    stale = store.history("u1")  # taken before the deletion
    retriever.retrieve(stale, "nurse")
    store.delete_message("u1", "u1:2")
    assert not _on_disk(emb, NURSE) and store.is_deleted(text_hash(NURSE))
    pool = retriever.retrieve(stale, "Am I working as a nurse?")  # the caller still holds the text ...
    assert len(pool) == 4
    assert not _on_disk(emb, NURSE)  # ... but nothing derived from it is written to disk
    assert all(text_hash(NURSE) not in idx.text_hashes for idx in retriever._indexes.values())  # nor kept in memory
    # A new process wired to the store's tombstones refuses too (the purge's in-memory guard is gone).
    fresh = _fake_retriever(emb, is_deleted=MemoryStore(tmp_path / "store").is_deleted)
    fresh.retrieve(stale, "nurse")
    assert not _on_disk(emb, NURSE) and _on_disk(emb, "Porto is lovely in spring.")
    # Storing the same text again lifts its tombstone.
    store.append("u1", "s4", "user", NURSE, "t")
    assert not store.is_deleted(text_hash(NURSE)) and not MemoryStore(tmp_path / "store").is_deleted(text_hash(NURSE))


def test_pending_user_deletion_never_removes_a_recreated_users_new_messages(tmp_path):
    from lazymem.data.store import DeletionIncomplete

    store = MemoryStore(tmp_path)
    _fill(store)
    calls = []

    def fails_once(d):
        calls.append(d.scope)
        if len(calls) == 1:
            raise RuntimeError("cache offline")

    store.subscribe(fails_once)
    with pytest.raises(DeletionIncomplete, match="fails_once"):
        store.delete_user("u1")
    assert store.users() == [] and store.is_deleted(text_hash(NURSE))
    assert store.append("u1", "s9", "user", "A fresh start.", "t") == "u1:0"  # ids restart after delete_user
    assert [d.scope for d in store.complete_pending()] == ["user"] and calls == ["user", "user"]
    assert [m.text for m in store.history("u1")] == ["A fresh start."]
    log = [json.loads(line) for line in (tmp_path / "deletions.log").read_text().splitlines()]
    assert [(e["scope"], e["status"], len(e["text_hashes"])) for e in log] == [("user", "complete", 4)]
