"""The query path (paper Sec. 3): the one front door that runs retrieve -> window -> construct -> answer.

- ``config``: ``PipelineConfig`` (method, retrieval, window, models, decoding) and the methods;
- ``query``: ``LazyMemPipeline`` (``answer`` runs all four steps, ``process`` the first three) and
  ``question_windows`` (retrieval + windows of one question without a pipeline object);
- ``results``: ``QueryResult`` and ``WindowResult``, what a run records;
- ``baselines`` (Oracle Session, NanoMemory) and ``mem0`` (Mem0 run locally: ``Mem0Store``, imported
  only by method ``mem0``): methods that build their memory their own way.
"""
from lazymem.pipeline.config import (
    COMPRESSED_METHODS,
    DEFAULT_ANSWER_SAMPLING,
    DEFAULT_MPM_SAMPLING,
    METHODS,
    RETRIEVING_METHODS,
    ROLES,
    PipelineConfig,
)
from lazymem.pipeline.query import LazyMemPipeline, question_windows
from lazymem.pipeline.results import QueryResult, WindowResult

__all__ = [
    "COMPRESSED_METHODS", "DEFAULT_ANSWER_SAMPLING", "DEFAULT_MPM_SAMPLING", "METHODS", "RETRIEVING_METHODS", "ROLES",
    "PipelineConfig", "LazyMemPipeline", "question_windows", "QueryResult", "WindowResult",
]
