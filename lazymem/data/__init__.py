"""Data (paper Sec. 4 setup): records' loaders for LongMemEval and LoCoMo, the synthetic generator, the paper's split, the verbatim store."""

from lazymem.data.datasets import (  # noqa: F401
    DEFAULT_SPEC,
    load_dataset,
    summarize,
)
from lazymem.data.locomo import (  # noqa: F401
    load_locomo,
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
