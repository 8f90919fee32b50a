"""Data (paper Sec. 4 setup): records' loaders, the synthetic generator, the paper's split, the verbatim store.

Modules:

- ``datasets``: ``load_dataset(SPEC)``, the one entry point for every source (a LongMemEval
  or LoCoMo file, or a ``synthetic:...`` spec; ``DEFAULT_SPEC``), and ``summarize``.
- ``longmemeval``: the official LongMemEval JSON schema into the shared records
  (``load_longmemeval``, ``parse_records``, ``parse_time``).
- ``locomo``: LoCoMo's ``locomo10.json`` into the shared records, with evidence-id repairs
  (``load_locomo``, ``repair_evidence_id``).
- ``synthetic/``: the deterministic LongMemEval-schema generator, the default data set
  (``generate_records``, ``write_synthetic``, ``parse_spec``, ...; its docstring maps its modules;
  ``long=1``: LongMemEval_S-like long assistant turns).
- ``casual/``: casual two-person conversations between named speakers across dated sessions, in
  the LoCoMo schema (``synthetic-casual:...`` specs; training data of LazyMem-135M v2).
- ``lengths``: message-length distributions by role kind (``lazymem data lengths``).
- ``split``: the paper's stratified train/validation/test split (``SPLITS``, ``allocate``,
  ``stratified_split``).
- ``deletions``: the Deletion record, ``DeletionIncomplete``, and the atomic audit-log/tombstone files;
- ``store``: the verbatim append-only per-user store with deletion (``MemoryStore``), and
  ``text_hash`` (from ``lazymem.text``), the key its deletion notices carry.

The names below are re-exported so callers can write ``from lazymem.data import ...``.
"""

from lazymem.data.datasets import (  # noqa: F401
    DEFAULT_SPEC,
    available_specs,
    evidence_profile,
    load_dataset,
    spec_style,
    summarize,
    summary_text,
)
from lazymem.data.locomo import (  # noqa: F401
    load_locomo,
    parse_locomo,
    repair_evidence_id,
)
from lazymem.data.longmemeval import (  # noqa: F401
    load_longmemeval,
    parse_records,
    parse_time,
)
from lazymem.data.split import (  # noqa: F401
    SPLITS,
    allocate,
    stratified_split,
)
from lazymem.data.store import (  # noqa: F401
    DeletionIncomplete,
    MemoryStore,
    text_hash,
)
from lazymem.data.synthetic import (  # noqa: F401
    canonical_json_chunks,
    generate_records,
    generate_with_facts,
    parse_spec,
    records_sha256,
    spec_string,
    synthetic_dataset,
    write_synthetic,
)
