"""The query path (paper Sec. 3): the one front door that runs retrieve -> window -> construct -> answer."""

from lazymem.pipeline.query import (  # noqa: F401
    LazyMemPipeline,
    PipelineConfig,
    bridge_sizes,
)
