"""Construct selectively (paper Sec. 3.2): the window prompt, the format gate, merging and assembly, processors."""

from lazymem.construct.gate import (  # noqa: F401
    ConstructionStats,
    Decision,
    ExtractiveConfig,
    ExtractiveProcessor,
    FAILURE_KINDS,
    FIELDS,
    GATE_OK,
    GateVerdict,
    assemble_memory,
    construct_memory,
    construction_stats,
    decision_schema,
    lexical_scores,
    merge_decisions,
    parse_decisions,
    strip_think,
)
