"""Verbatim append-only store with deletion."""
import json

import pytest

from lazymem.errors import LoadError
from lazymem.data import MemoryStore, text_hash


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
    stored = lambda: {h for f in (tmp_path / "emb").rglob("*.hashes.npy") for h in np.load(f).tolist()}
    assert any(secret.encode() == h or secret == h for h in stored())  # embedded and cached on disk

    store.delete_message("u1", "u1:2")
    assert not any(secret.encode() == h or secret == h for h in stored())  # purged from disk
    assert all(secret not in idx.text_hashes for idx in retriever._indexes.values())  # and from memory
    pool = retriever.retrieve(store.history("u1"), "Am I working as a nurse?")
    assert len(pool) == 3 and all("nurse" not in store.history("u1")[p].text for p in pool.positions)
