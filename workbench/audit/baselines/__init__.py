"""Baselines built on outside libraries (LightRAG, GraphRAG), behind the same strategy
interface.

The libraries are imported on first use only; a missing one raises an error that names the
install command (``LightragUnavailable``, ``GraphragUnavailable``).
"""

from workbench.audit.baselines.graphrag_context import GraphragRetriever
from workbench.audit.baselines.graphrag_index import (
    GraphragIndexError,
    GraphragIndexes,
    GraphragUnavailable,
)
from workbench.audit.baselines.index_store import IndexCost, index_key, locate
from workbench.audit.baselines.lightrag_context import LightragRetriever
from workbench.audit.baselines.lightrag_index import (
    LightragIndexError,
    LightragIndexes,
    LightragUnavailable,
)

__all__ = [
    "GraphragIndexError",
    "GraphragIndexes",
    "GraphragRetriever",
    "GraphragUnavailable",
    "IndexCost",
    "LightragIndexError",
    "LightragIndexes",
    "LightragRetriever",
    "LightragUnavailable",
    "index_key",
    "locate",
]
