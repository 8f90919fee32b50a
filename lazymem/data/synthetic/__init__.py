"""Deterministic synthetic chat histories in the official LongMemEval schema (the default data set).

Each history is a run of user/assistant sessions (6-16 messages, user first) of everyday
chat on one theme (travel, pets, food, ...). Into some of them the generator plants
facts, one (user, assistant) pair per statement, and asks one question per fact:

- single-session-user: the user states a detail once ("My sister, Priya, ...").
- single-session-assistant: the assistant states it (a book it recommended, a total it worked out).
- single-session-preference: the user states a like/dislike; the answer is a rubric.
- multi-session: 2-4 statements in different sessions, aggregated (a count or a sum).
- temporal-reasoning: events stated on the day they happen ("today (Saturday, May 20)");
  answers (days between, days ago, which first, when) come from the session dates.
- knowledge-update: a value stated, then changed in a later session; the answer is the new one.
- abstention (``_abs`` question ids, one per 12 questions): asks for something never
  said, next to a planted near-miss ("my brother's name" when only a sister was named).

Distractor sessions reuse the fact vocabulary about other people or in general
("My friend Tom is moving to Lisbon", "How often should I water a monstera?") so that
BM25 and dense retrieval have real work to do, and nothing in them contradicts a fact.

Records follow the official schema exactly, one per question. Records of one history
share the same ``haystack_session_ids`` and ``haystack_dates`` list objects, and their
``haystack_sessions`` lists share every session list object *except* the sessions that
hold that question's evidence: those are new lists in which the evidence turns are
shallow-copied dicts with ``has_answer: true`` (everywhere else ``has_answer`` is false).
Evidence follows LongMemEval: the user turn (the assistant turn for
single-session-assistant) of each statement; for knowledge-update both the old and the
new statement; for abstention the near-miss statement, whose session is in
``answer_session_ids`` (as in the official ``_abs`` records). Every evidence turn contains
its answer-bearing string verbatim; ``generate_with_facts`` returns those strings.

Modules (template text apart from logic). The output is fixed per seed and spec down to the
byte: every module draws from the history's one ``random.Random`` in a fixed order, so
reordering draws (or the makers in a ``_*_FAMILIES`` tuple) changes every data set.

- ``generator``: the public API: ``generate_records``, ``generate_with_facts``,
  ``canonical_json_chunks``, ``records_sha256``, ``write_synthetic``, ``synthetic_dataset``,
  ``spec_string``, ``parse_spec``.
- ``history``: one history: session sizes and dates, placing statements, distractor filling.
- ``plan``: which fact each question slot asks about (type cycle, abstention slots).
- ``model``: ``Evidence``, the planted statement/fact records, per-history draws, phrase helpers.
- ``facts_user``, ``facts_assistant``, ``facts_preference``, ``facts_multi``,
  ``facts_temporal``, ``facts_update``, ``facts_abstention``: the fact makers and their
  statement/question templates, one module per LongMemEval question type (data templates).
- ``pools``: slot pools: names, cities, products with prices, ... (data).
- ``chatter``: distractor exchanges per theme, openers, closers, bridges (data).

>>> records = generate_records(n_messages=60, seed=1, questions_per_history=6)
>>> len(records), sorted({r["question_type"] for r in records})[:2]
(6, ['knowledge-update', 'multi-session'])
>>> sum(len(s) for s in records[0]["haystack_sessions"])
60
"""

from __future__ import annotations

from lazymem.data.synthetic.generator import (  # noqa: F401
    canonical_json_chunks,
    generate_records,
    generate_with_facts,
    parse_spec,
    records_sha256,
    spec_string,
    synthetic_dataset,
    write_synthetic,
)
from lazymem.data.synthetic.model import Evidence  # noqa: F401
