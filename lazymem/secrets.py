"""One rule for credentials: which names are secret, and how values are kept off disk.

A name is secret when its last word (split on ``_``, ``-``, ``.`` and camelCase) is a
credential word: ``api_key``, ``OPENAI_API_KEY``, ``hf_token``, ``db_password``,
``client_secret``, ``Authorization``. ``api_key_env`` (the *name* of an environment
variable) and ``max_tokens`` are not.

>>> [is_secret(n) for n in ("api_key", "hf_token", "Authorization", "api_key_env", "max_tokens")]
[True, True, True, False, False]
>>> redact({"api_key_env": "OPENAI_API_KEY", "extra_body": {"api_key": "sk-1"}, "max_tokens": 5})
{'api_key_env': 'OPENAI_API_KEY', 'extra_body': {'api_key': '<redacted>'}, 'max_tokens': 5}
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterable, Mapping

REDACTED = "<redacted>"
MASK = "***"
SECRET_WORDS = frozenset({"key", "apikey", "token", "secret", "password", "passwd", "authorization", "auth",
                          "credential", "credentials"})
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def is_secret(name: Any) -> bool:
    """Whether a field or parameter name holds a credential (its last word is a credential word)."""
    if not isinstance(name, str):
        return False
    words = _WORDS.findall(name)
    return bool(words) and words[-1].lower() in SECRET_WORDS


def redact(obj: Any) -> Any:
    """A copy of a mapping / list tree with the values under secret names replaced by "<redacted>"."""
    if isinstance(obj, Mapping):
        return {k: (REDACTED if is_secret(k) and obj[k] is not None else redact(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact(v) for v in obj]
    return obj


class Masker:
    """Masks known secret values (e.g. API keys read from the environment) out of text.

    Values shorter than ``min_len`` are ignored: masking them would also replace unrelated text.

    >>> Masker(["sk-abcdef"]).mask('{"error": "bad key sk-abcdef"}')
    '{"error": "bad key ***"}'
    """

    def __init__(self, values: Iterable[str], min_len: int = 6, mask: str = MASK):
        self.values = sorted({v for v in values if isinstance(v, str) and len(v) >= min_len}, key=len, reverse=True)
        self.mask_text = mask

    def mask(self, text: str) -> str:
        for v in self.values:
            text = text.replace(v, self.mask_text)
        return text

    def dumps(self, obj: Any, **kw) -> str:
        """``json.dumps`` (non-ASCII kept, unknown types as str) with every secret value masked."""
        return self.mask(json.dumps(obj, ensure_ascii=False, default=str, **kw))
