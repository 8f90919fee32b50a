"""The per-message KEEP prior: the prompt's rule 11 ("prefer KEEP for messages about the query's
entity or attribute") as a decoding prior for a model that writes a decision trace.

Message i of a window gets

    prior_i = lexical * x_i + dense * s_i

on the ``" KEEP"`` logit where its trace line's op is written (``Sampling.trace_keep_bias``), beside
the global KEEP bias; x_i is the share of the query's content words the message has (the extractive
processor's ``lexical_scores``) and s_i the cosine similarity of the query and the message under a
sentence encoder (``dense_model``; all-MiniLM-L6-v2 by default, the model the shipped weight was
chosen with). The weights are chosen on development windows with ``lazymem train keep-prior``.

>>> KeepPrior(lexical=4.0)("When did I move to Lisbon?", ["I moved to Lisbon", "Lisbon is sunny", "Hi"])
(4.0, 2.0, 0.0)
>>> bool(KeepPrior())
False
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from lazymem.construct.extractive import lexical_scores
from lazymem.errors import ConfigError
from lazymem.fields import h

DEFAULT_DENSE_MODEL = "minilm-offline"  # lazymem.retrieve.OFFLINE_MINILM


def dense_scores(query: str, texts: Sequence[str], model: str = DEFAULT_DENSE_MODEL) -> list[float]:
    """Cosine similarity of the query and each text under the sentence encoder ``model`` (the process-wide
    one ``lazymem.retrieve.dense`` shares with retrieval; the query through its query prompt, the texts
    through its document prompt, as retrieval encodes them)."""
    if not texts:
        return []
    from lazymem.retrieve.dense import load_sentence_transformer
    from lazymem.runtime import torch_threads

    m = load_sentence_transformer(model)
    with torch_threads(1):  # a window's few short texts: intra-op threads only spin on shared cores
        q = m.encode_query([query], normalize_embeddings=True, convert_to_numpy=True)
        d = m.encode_document(list(texts), normalize_embeddings=True, convert_to_numpy=True)
    return [float(v) for v in (d @ q[0])]


@dataclass(frozen=True)
class KeepPrior:
    """Weights of the per-message KEEP prior; falsy when both are 0 (no prior)."""

    lexical: float = field(default=0.0, metadata=h("weight of the share of the query's content words"))
    dense: float = field(default=0.0, metadata=h("weight of the query-message cosine similarity"))
    dense_model: str = field(default=DEFAULT_DENSE_MODEL, metadata=h("the sentence encoder of the cosine"))

    def __post_init__(self) -> None:
        for name in ("lexical", "dense"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0):
                raise ConfigError(f"KeepPrior.{name} must be a finite number >= 0, got {v!r}")
        if not (isinstance(self.dense_model, str) and self.dense_model.strip()):
            raise ConfigError(f"KeepPrior.dense_model must be a model name or path, got {self.dense_model!r}")

    def __bool__(self) -> bool:
        return bool(self.lexical or self.dense)

    def __call__(self, query: str, texts: Sequence[str]) -> tuple[float, ...]:
        """One prior per text (``Sampling.trace_keep_bias`` of a window's trace lines)."""
        lex = lexical_scores(query, texts) if self.lexical else [0.0] * len(texts)
        den = dense_scores(query, texts, self.dense_model) if self.dense else [0.0] * len(texts)
        return tuple(round(self.lexical * x + self.dense * s, 6) for x, s in zip(lex, den))
