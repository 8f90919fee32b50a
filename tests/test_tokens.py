"""Qwen3 token counting (lazymem.llm.tokens) against ids published by Qwen and Hugging Face."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazymem.llm import FETCH_COMMAND, TokenizerMissing, count_tokens, count_tokens_batch, encode, tokens


@pytest.fixture(scope="module")
def qwen3():
    try:
        return tokens.qwen3_tokenizer()
    except TokenizerMissing as e:
        pytest.skip(f"Qwen3 tokenizer not fetched; run `{FETCH_COMMAND}` ({e})")


# transformers tests/models/qwen2/test_tokenization_qwen2.py (integration test on the
# Qwen2.5 tokenizer, whose 151,643 byte-level BPE ranks Qwen3 shares): input text and ids.
HF_TEXT = (
    "This is a test 😊\nI was born in 92000, and this is falsé.\n生活的真谛是\nHi  Hello\nHi   Hello\n\n \n  \n"
    " Hello\n<s>\nhi<s>there\nThe following string should be properly encoded: "
    "Hello.\nBut ird and ปี   ird   ด\n"
    "Hey how are you doing"
)
HF_IDS = [
    1986,
    374,
    264,
    1273,
    26525,
    232,
    198,
    40,
    572,
    9223,
    304,
    220,
    24,
    17,
    15,
    15,
    15,
    11,
    323,
    419,
    374,
    31932,
    963,
    624,
    105301,
    88051,
    116109,
    20412,
    198,
    13048,
    220,
    21927,
    198,
    13048,
    256,
    21927,
    271,
    48426,
    21927,
    198,
    44047,
    397,
    6023,
    44047,
    29,
    18532,
    198,
    785,
    2701,
    914,
    1265,
    387,
    10277,
    20498,
    25,
    21927,
    624,
    3983,
    220,
    2603,
    323,
    220,
    54684,
    28319,
    256,
    220,
    2603,
    256,
    220,
    37033,
    198,
    18665,
    1246,
    525,
    498,
    3730,
]


def test_vocabulary_matches_qwen3(qwen3):
    assert qwen3.get_vocab_size() == tokens.VOCAB_SIZE == 151_669
    assert encode("Hello world") == [9707, 1879]
    # Qwen's chat and thinking special tokens keep their Qwen3 ids and are single tokens
    assert encode("<|im_start|>hello<|im_end|>") == [151644, 14990, 151645]
    assert [qwen3.token_to_id(t) for t in ("<|endoftext|>", "<think>", "</think>")] == [151643, 151667, 151668]


def test_matches_the_transformers_integration_ids(qwen3):
    assert encode(HF_TEXT) == HF_IDS
    assert count_tokens(HF_TEXT) == len(HF_IDS) == 76


def test_count_edge_cases_and_batch(qwen3):
    assert count_tokens("") == 0 and count_tokens_batch([]) == []
    texts = ["Hello world", "", "I moved to Lisbon in May 2023.", HF_TEXT]
    assert count_tokens_batch(texts) == [count_tokens(t) for t in texts] == [2, 0, count_tokens(texts[2]), 76]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=80))
def test_byte_level_round_trip(text):
    """Byte-level BPE loses nothing after Qwen3's NFC normaliser: decoding gives the NFC form back
    (a CJK compatibility ideograph such as U+F900 comes back as its canonical U+8C48)."""
    try:
        tok = tokens.qwen3_tokenizer()
    except TokenizerMissing:
        pytest.skip("Qwen3 tokenizer not fetched")
    ids = encode(text)
    assert tok.normalizer is not None and "NFC" in str(tok.normalizer)
    assert tok.decode(ids, skip_special_tokens=False) == unicodedata.normalize("NFC", text)
    assert count_tokens(text) == len(ids)


def test_missing_tokenizer_names_the_fetch_command(monkeypatch, tmp_path):
    monkeypatch.setenv(tokens.DIR_ENV, str(tmp_path / "nowhere"))
    tokens.qwen3_tokenizer.cache_clear()
    try:
        with pytest.raises(TokenizerMissing, match="fetch_qwen3_tokenizer.sh"):
            count_tokens("hi")
    finally:
        tokens.qwen3_tokenizer.cache_clear()


def test_cache_root_env(monkeypatch, tmp_path):
    monkeypatch.delenv(tokens.DIR_ENV, raising=False)
    monkeypatch.setenv("LAZYMEM_CACHE", str(tmp_path))
    assert tokens.qwen3_tokenizer_dir() == tmp_path / "tokenizers" / "qwen3"


def test_round_trip_of_a_compatibility_ideograph_is_its_nfc_form():
    """The case hypothesis found in CI: U+F900 decodes as U+8C48 (Qwen3 normalises with NFC)."""
    try:
        tok = tokens.qwen3_tokenizer()
    except TokenizerMissing:
        pytest.skip("Qwen3 tokenizer not fetched")
    assert tok.decode(encode("\uf900"), skip_special_tokens=False) == "\u8c48"
