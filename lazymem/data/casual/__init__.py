"""Casual conversations between two NAMED people across DATED sessions, in the LoCoMo schema (training data).

LoCoMo-like in register, never in text (LoCoMo and LongMemEval are test sets, never training
data): small talk, plans and events, photos described in text ("[shares a photo of ...]"),
references back to earlier sessions ("How's the pottery class going?"), third parties by
name, and turns from one-liners to a few sentences. Planted facts come with questions in
LoCoMo's five categories (multi-hop over two sessions, temporal, open-domain inference,
single-hop, adversarial) and gold evidence dia_ids; distractors reuse the facts' vocabulary
about other people (a coworker's new dog) so retrieval has work to do. ``topical=1`` adds turns
that share a question's words and never its answer (the two talk on about a planted statement's
topic; sessions echo other facts); ``topical=2`` adds the fact's own speaker on its topic in other
sessions and lead-ins before half the planted statements (LoCoMo's hard cases; docs/development.md).
Sample ids are ``syncasual{seed}-c{i}``, never LoCoMo's ``conv-*``.

Modules: ``generator`` (the samples, their hash, the Dataset through the LoCoMo parser,
the spec pair), ``facts`` (fact makers and their templates, one per category), ``chatter``
(small talk, reactions, distractors; data) and ``pools`` (names and values; data).

>>> ds = casual_dataset(n_conversations=1, n_sessions=6, seed=0, n_questions=6)
>>> h = next(iter(ds.histories.values()))
>>> sorted({m.role for m in h}) == sorted(h.speakers), ds.name
(True, 'synthetic-casual:conversations=1,sessions=6,seed=0,questions=6')
"""

from __future__ import annotations

from lazymem.data.casual.generator import (  # noqa: F401
    PREFIX,
    casual_dataset,
    casual_samples,
    casual_samples_with_facts,
    casual_spec_string,
    parse_casual_spec,
    samples_sha256,
)
