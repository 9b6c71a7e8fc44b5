"""Baselines built on outside libraries (LightRAG), behind the same strategy interface.

The libraries are imported on first use only; a missing one raises an error that names the
install command (``LightragUnavailable``).
"""

from workbench.audit.baselines.lightrag_context import LightragRetriever, locate
from workbench.audit.baselines.lightrag_index import (
    IndexCost,
    LightragIndexError,
    LightragIndexes,
    LightragUnavailable,
    index_key,
)

__all__ = [
    "IndexCost",
    "LightragIndexError",
    "LightragIndexes",
    "LightragRetriever",
    "LightragUnavailable",
    "index_key",
    "locate",
]
