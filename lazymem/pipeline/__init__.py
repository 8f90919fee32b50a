"""The query path (paper Sec. 3): the one front door that runs retrieve -> window -> construct -> answer.

- ``config``: ``PipelineConfig`` (method, retrieval, window, models, decoding, each method's section);
- ``methods``: one ``Method`` class per memory method, registered by name (``method_class``); the
  pipeline calls the method, everything else asks it what it does;
- ``query``: ``LazyMemPipeline`` (``answer`` runs all four steps, ``process`` the first three) and
  ``question_windows`` (retrieval + windows of one question without a pipeline object);
- ``results``: ``QueryResult`` and ``WindowResult``, what a run records;
- ``baselines`` (Oracle Session, NanoMemory) and ``mem0`` (Mem0 run locally: ``Mem0Store``, imported
  only by method ``mem0``): the algorithms behind the baseline methods.
"""

from lazymem.pipeline.config import (
    DEFAULT_ANSWER_SAMPLING,
    DEFAULT_MPM_SAMPLING,
    METHODS,
    ROLES,
    PipelineConfig,
)
from lazymem.pipeline.methods import Method, MethodOutput, method_class, method_names
from lazymem.pipeline.query import LazyMemPipeline, question_windows
from lazymem.pipeline.results import QueryResult, WindowResult

__all__ = [
    "DEFAULT_ANSWER_SAMPLING",
    "DEFAULT_MPM_SAMPLING",
    "METHODS",
    "ROLES",
    "PipelineConfig",
    "Method",
    "MethodOutput",
    "method_class",
    "method_names",
    "LazyMemPipeline",
    "question_windows",
    "QueryResult",
    "WindowResult",
]
