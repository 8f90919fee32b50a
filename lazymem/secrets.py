"""One rule for credentials: which names are secret, and how values are kept off disk.

A name is secret when its last word (split on ``_``, ``-``, ``.`` and camelCase) is a
credential word: ``api_key``, ``OPENAI_API_KEY``, ``hf_token``, ``db_password``,
``client_secret``, ``Authorization``. ``api_key_env`` (the *name* of an environment
variable) and ``max_tokens`` are not.

>>> [is_secret(n) for n in ("api_key", "hf_token", "Authorization", "api_key_env", "max_tokens")]
[True, True, True, False, False]
>>> redact({"api_key_env": "OPENAI_API_KEY", "extra_body": {"api_key": "sk-1"}, "max_tokens": 5})
{'api_key_env': 'OPENAI_API_KEY', 'extra_body': {'api_key': '<redacted>'}, 'max_tokens': 5}

A value is also redacted, whatever its name, when it *looks* like a credential
(``looks_secret``): a known key prefix (``sk-``, ``Bearer ``, ``hf_``, ``ghp_``, ``xoxb-``, ...)
or a long random-looking token. Ordinary config values (model names, paths, URLs,
prompts, sha256 / git hex digests) are kept.

>>> redact({"extra_body": {"x-goog-api-key": "AIzaSyA1234567890abcdefghijklmnopqrstu"}, "model": "Qwen/Qwen3-8B"})
{'extra_body': {'x-goog-api-key': '<redacted>'}, 'model': 'Qwen/Qwen3-8B'}
>>> redact_command(["lazymem", "eval", "--set", "pipeline.mpm.extra_body.api_key=abc", "--set", "seed=1"])
['lazymem', 'eval', '--set', 'pipeline.mpm.extra_body.api_key=<redacted>', '--set', 'seed=1']
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "<redacted>"
MASK = "***"
SECRET_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "authorization", "auth", "credential", "credentials"}
)
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def is_secret(name: Any) -> bool:
    """Whether a field or parameter name holds a credential (its last word is a credential word)."""
    if not isinstance(name, str):
        return False
    words = _WORDS.findall(name)
    return bool(words) and words[-1].lower() in SECRET_WORDS


# Known credential prefixes; each must be followed by >= 16 token characters with a digit and
# nothing else (so "sk-learn", "hf_hub" or "hf_transfer_enabled" stay). OpenAI/Anthropic sk-, Hugging
# Face hf_, GitHub ghp_/gho_/ghu_/ghs_/ghr_/github_pat_, Slack xox?-, GitLab glpat-, Google AIza, AWS AKIA/ASIA.
_PREFIXED = re.compile(
    r"(?:sk-|hf_|gh[pousr]_|github_pat_|xox[abposr]-|glpat-|AIza|AKIA|ASIA)"
    r"(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{16,}"
)
_HTTP_AUTH = r"(?:[Bb]earer\s+[A-Za-z0-9._~+/=\-]{8,}|Basic\s+(?=[A-Za-z0-9+/]*[0-9])[A-Za-z0-9+/]{8,}={0,2})"
_BEARER = re.compile(_HTTP_AUTH)
_TOKEN = re.compile(r"[A-Za-z0-9_\-+=]{32,}")
_HEX = re.compile(r"[0-9a-fA-F]+")


def _entropy(s: str) -> float:
    from collections import Counter
    from math import log2

    n = len(s)
    return -sum(c / n * log2(c / n) for c in Counter(s).values())


def looks_secret(value: Any) -> bool:
    """Whether a value looks like a credential whatever field it sits under.

    True for a string (surrounding whitespace ignored) that is exactly one of:

    - a known key prefix followed by >= 16 characters of ``[A-Za-z0-9_-]``, one a digit: ``sk-``, ``hf_``,
      ``ghp_`` / ``gho_`` / ``ghu_`` / ``ghs_`` / ``ghr_``, ``github_pat_``, ``xoxb-`` (Slack
      ``xox[abposr]-``), ``glpat-``, ``AIza``, ``AKIA``, ``ASIA``;
    - an HTTP credential: ``Bearer`` (or ``bearer``), whitespace, >= 8 token characters; or
      ``Basic``, whitespace, >= 8 base64 characters including a digit;
    - a random-looking token: >= 32 characters of ``[A-Za-z0-9_-+=]`` (no ``/``, ``.``, ``:``
      or spaces, so no path, URL, file name or prose), with upper case, lower case and
      digits, at most 10% ``-``/``_`` (so not a hyphenated model name), a Shannon entropy
      >= 4 bits per character, and not all hex (sha256 / git digests are kept).

    Anything else (non-strings, short strings, model names, paths, URLs, prompts) is False.

    >>> [looks_secret(v) for v in ("sk-proj-abcdefgh1234", "Bearer eyJhbGciOi.x", "hf_AbCdEfGhIjKlMn0pQr",
    ...                            "xoxb-1234567890-abcdef")]
    [True, True, True, True]
    >>> looks_secret("Zm9vYmFyYmF6cXV4UXVVeEtleTEyMzQ1Njc4OTA")
    True
    >>> looks_secret("hf_transfer_enabled"), looks_secret("sk-learn-compat-layer")
    (False, False)
    >>> [looks_secret(v) for v in ("sk-1", "sklearn", "hf_hub", "gpt-4o-mini", "Qwen/Qwen3-8B", "/data/runs/a",
    ...  "http://127.0.0.1:8000/v1", "OPENAI_API_KEY",
    ...  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    ...  "Llama-2-13B-chat-GPTQ-Instruct-v2", "Answer the question.", "Basic statistics", 42, None)]
    [False, False, False, False, False, False, False, False, False, False, False, False, False, False]
    """
    if not isinstance(value, str):
        return False
    v = value.strip()
    if _PREFIXED.fullmatch(v) or _BEARER.fullmatch(v):
        return True
    if not _TOKEN.fullmatch(v) or _HEX.fullmatch(v):
        return False
    if not (any(c.isupper() for c in v) and any(c.islower() for c in v) and any(c.isdigit() for c in v)):
        return False
    if (v.count("-") + v.count("_")) > 0.1 * len(v):
        return False
    return _entropy(v) >= 4.0


def redact(obj: Any) -> Any:
    """A copy of a mapping / list tree with the values under secret names, and the values
    that look like credentials (``looks_secret``), replaced by "<redacted>"; in any other
    string, a URL's password (``http://user:<redacted>@host/v1``) and secret query parameters
    (``redact_urls``); in a key, a ``name: value`` pair with a secret name (YAML reads the shell's
    ``{api_key:x}`` as the key "api_key:x").

    A tree without any returns equal (mappings as dicts, tuples as lists): its JSON is unchanged.

    >>> redact({"base_url": "http://me:pw12@host:8000/v1", "extra_body": {"api_key:x": None}})
    {'base_url': 'http://me:<redacted>@host:8000/v1', 'extra_body': {'api_key:<redacted>': None}}
    """
    if isinstance(obj, Mapping):
        return {
            (_redact_pairs(k) if isinstance(k, str) else k): (
                REDACTED if is_secret(k) and obj[k] is not None else redact(v)
            )
            for k, v in obj.items()
        }
    if isinstance(obj, (list, tuple)):
        return [redact(v) for v in obj]
    return REDACTED if looks_secret(obj) else redact_urls(obj) if isinstance(obj, str) else obj


# scheme://authority... up to whitespace or a quote; the authority's userinfo ends at its last "@".
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'<>`]+")
# name: value / name=value / "name": "value" pairs (YAML or JSON flow mappings, URL queries, key=value
# lists); the value is quoted, or runs to the next , } ] & # or line end.
_PAIR = re.compile(
    r"(?<![\w/:@.\-])([\"']?)([A-Za-z_][\w.\-]*)\1(\s*[:=]\s*)"
    r"(\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^,}\]&#\s][^,}\]&#\n]*)"
)


def _redact_pairs(text: str, mask: str = REDACTED) -> str:
    """`text` with the value of every ``name: value`` / ``name=value`` pair whose name is secret masked.

    >>> _redact_pairs('{api_key:abc, "token": "x y", n: 1}')
    '{api_key:<redacted>, "token": <redacted>, n: 1}'
    """
    if not any(w in text.lower() for w in ("key", "token", "secret", "pass", "auth", "credential")):
        return text
    return _PAIR.sub(
        lambda m: m.group(0) if not is_secret(m.group(2)) else m.group(0)[: m.start(4) - m.start(0)] + mask, text
    )


def _redact_url(url: str, mask: str) -> str:
    scheme, _, rest = url.partition("://")
    end = min([i for i in (rest.find(c) for c in "/?#") if i >= 0] or [len(rest)])
    authority, tail = rest[:end], rest[end:]
    if "@" in authority:
        userinfo, _, host = authority.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        authority = (f"{user}:{mask}" if colon else mask) + "@" + host
    if "?" in tail or "#" in tail:
        tail = _redact_pairs(tail, mask)
    return f"{scheme}://{authority}{tail}"


def redact_urls(text: str, mask: str = REDACTED) -> str:
    """`text` with each URL's password masked (a bare userinfo, often a token, wholly) and the
    values of its secret query parameters; scheme, user, host and path are kept.

    >>> redact_urls("to http://user:sk-abc@10.0.0.1:8000/v1 and https://tok@h/x?api_key=1&n=2")
    'to http://user:<redacted>@10.0.0.1:8000/v1 and https://<redacted>@h/x?api_key=<redacted>&n=2'
    >>> redact_urls("http://127.0.0.1:8000/v1")
    'http://127.0.0.1:8000/v1'
    """
    if "://" not in text or not ("@" in text or "?" in text or "#" in text):
        return text
    out = _URL.sub(lambda m: _redact_url(m.group(0), mask), text)
    return text if out == text else out  # the same object when nothing changed (Masker relies on it)


_INLINE = re.compile(
    _HTTP_AUTH + r"|(?<![A-Za-z0-9/._\-])(?:sk-|hf_|gh[pousr]_|github_pat_|xox[abposr]-|"
    r"glpat-|AIza|AKIA|ASIA)(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{16,}"
)


def _secret_flag(flag: str) -> bool:
    return flag.startswith("-") and is_secret(flag.lstrip("-"))


_KEY_VALUE = re.compile(r"[A-Za-z_][\w.\-]*=")  # KEY=VALUE of --set, -p and notebook parameters


def _value_has_secret(value: str) -> bool:
    """Whether an override's VALUE holds a credential in any form ``--set`` accepts: a scalar that
    looks secret, a prefixed key or ``Bearer`` token anywhere, a secret-named pair in a YAML / JSON
    flow mapping or sequence (parsed, or as text when it does not parse or YAML misreads it)."""
    if looks_secret(value) or _INLINE.search(value) or _redact_pairs(value) != value:
        return True
    from lazymem.errors import ConfigError
    from lazymem.yamlio import load_yaml

    try:
        parsed = load_yaml(value)
    except ConfigError:  # not YAML (or an alias bomb): the text checks above are all there is
        return False
    return not isinstance(parsed, str) and redact(parsed) != parsed


def redact_command(argv: Iterable[Any]) -> list:
    """A command line (``sys.argv``-like) with its credentials replaced by "<redacted>".

    - ``KEY=VALUE`` (after ``--set``, ``-p``, or as ``--set=KEY=VALUE``): the whole VALUE when KEY's
      last part (after the last ``.``) is secret, or VALUE holds a credential in any form
      ``--set`` accepts (``_value_has_secret``: scalar, YAML/JSON flow mapping or sequence); else
      only the passwords of the URLs in it (``redact_urls``);
    - a secret-named flag (``--api-key X``, ``--hf-token=X``, ``--password X``): its value;
    - any other item: a value that looks secret wholly, else its prefixed keys, ``Bearer`` tokens
      and URL passwords.

    >>> redact_command(["x", "--api-key", "abc", "--hf-token=abc", "--set",
    ...                 'pipeline.mpm.extra_body={"h": "sk-abcdefgh12345678"}'])
    ['x', '--api-key', '<redacted>', '--hf-token=<redacted>', '--set', 'pipeline.mpm.extra_body=<redacted>']
    >>> redact_command(["--set", "pipeline.mpm.extra_body={api_key:x}", "--set=pipeline.mpm.base_url=http://u:pw@h/v1"])
    ['--set', 'pipeline.mpm.extra_body=<redacted>', '--set=pipeline.mpm.base_url=http://u:<redacted>@h/v1']
    """
    items = [str(a) for a in argv]
    out: list = []
    prev = None
    for a in items:
        head = "--set=" if a.startswith("--set=") else ""
        if prev is not None and _secret_flag(prev) and "=" not in prev:
            out.append(REDACTED)
        elif a.startswith("-") and "=" in a and _secret_flag(a.split("=", 1)[0]):
            out.append(a.split("=", 1)[0] + "=" + REDACTED)
        elif head or _KEY_VALUE.match(a):
            key, _, value = a[len(head) :].partition("=")
            value = redact_urls(value)
            secret = is_secret(key.split(".")[-1]) or _value_has_secret(value)
            out.append(f"{head}{key}={REDACTED if secret else value}")
        elif looks_secret(a):
            out.append(REDACTED)
        else:
            out.append(redact_urls(_INLINE.sub(REDACTED, a)))
        prev = a
    return out


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
        """``json.dumps`` (non-ASCII kept, unknown types as str) with every secret value masked:
        the known values anywhere in the text, string values that ``looks_secret`` (by value
        only: names are not judged here, as records have fields like ``cache_key``), and URL
        passwords inside any string (``redact_urls``).

        >>> Masker([]).dumps({"h": "Bearer abcdefgh123", "model": "gpt-4o-mini"})
        '{"h": "***", "model": "gpt-4o-mini"}'
        """
        return self.mask(json.dumps(_mask_values(obj, self.mask_text), ensure_ascii=False, default=str, **kw))


def _mask_values(obj: Any, mask: str) -> Any:
    """A copy of a JSON-like tree with the string values that look secret replaced by `mask`
    (the tree itself when none does, so ordinary dumps are untouched)."""
    if isinstance(obj, Mapping):
        new = {k: _mask_values(v, mask) for k, v in obj.items()}
        return obj if all(new[k] is obj[k] for k in obj) else new
    if isinstance(obj, (list, tuple)):
        new_items = [_mask_values(v, mask) for v in obj]
        return obj if all(a is b for a, b in zip(new_items, obj)) else new_items
    if looks_secret(obj):
        return mask
    return redact_urls(obj, mask) if isinstance(obj, str) else obj
