"""LazyMem: store chat verbatim, retrieve broadly, construct selectively at query time.

Importing the package loads no model and no torch; every heavy import lives inside the
function that needs it.
"""

from lazymem.errors import ConfigError, LoadError
from lazymem.records import (
    LOCOMO_CATEGORIES,
    LONGMEMEVAL_TYPES,
    Dataset,
    History,
    LoadIssue,
    Message,
    Question,
    type_abbrev,
)

__version__ = "0.2.0"

__all__ = [
    "ConfigError",
    "LoadError",
    "Dataset",
    "History",
    "LoadIssue",
    "Message",
    "Question",
    "LONGMEMEVAL_TYPES",
    "LOCOMO_CATEGORIES",
    "type_abbrev",
    "__version__",
]
