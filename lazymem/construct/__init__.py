"""Construct selectively (paper Sec. 3.2): what happens to each window after retrieval.

Modules, in the order a window passes through them:

- ``prompt``: ``window_prompts`` builds the memory-processing model's input for every window
  (the ONE builder: inference, SFT data and GRPO prompts use it), with decision positions and
  gold labels aligned;
- ``gate``: ``parse_decisions``, the format gate (validity indicator of the paper's reward),
  its failure kinds, ``GateVerdict.fmt_ok`` (the paper's Gate Fmt.), ``decision_schema`` for
  constrained decoding, ``strip_think``;
- ``merge``: deduplication over overlapping sub-windows, memory assembly, construction statistics;
- ``extractive``: a training-free processor behind the same interface as a model;
- ``prior``: ``KeepPrior``, the per-message KEEP prior (lexical, dense) a trace-writing model decodes with.
"""

from lazymem.construct.extractive import (
    ExtractiveConfig,
    ExtractiveProcessor,
    MemoryProcessor,
    lexical_scores,
)
from lazymem.construct.gate import (
    FAILURE_KINDS,
    FIELDS,
    GATE_OK,
    OPS,
    STRUCTURAL_FAILURES,
    Decision,
    GateVerdict,
    decision_schema,
    parse_decisions,
    strip_think,
)
from lazymem.construct.merge import (
    ConstructionStats,
    assemble_memory,
    construction_stats,
    merge_decisions,
    window_positions,
)
from lazymem.construct.prior import KeepPrior
from lazymem.construct.prompt import BRIDGES, WindowPrompt, bridge_sizes, gold_labels, window_prompts

__all__ = [
    "ExtractiveConfig",
    "ExtractiveProcessor",
    "MemoryProcessor",
    "KeepPrior",
    "lexical_scores",
    "FAILURE_KINDS",
    "FIELDS",
    "GATE_OK",
    "OPS",
    "STRUCTURAL_FAILURES",
    "Decision",
    "GateVerdict",
    "decision_schema",
    "parse_decisions",
    "strip_think",
    "ConstructionStats",
    "assemble_memory",
    "construction_stats",
    "merge_decisions",
    "window_positions",
    "BRIDGES",
    "WindowPrompt",
    "bridge_sizes",
    "gold_labels",
    "window_prompts",
]
