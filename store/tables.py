"""The registry of every table: importing this module registers them all on
``SQLModel.metadata``.

Only ``store.db`` (engine creation), the Alembic environment and tests that compare the table
classes with the migrations import it. Table modules import ``store.core_tables`` for shared
tables and ``utcnow``; were that module the registry (``store.models`` was), each of them would
import a module that imports it back.
"""

from __future__ import annotations

import store.activations  # noqa: F401
import store.alert_tables  # noqa: F401
import store.alerts  # noqa: F401
import store.annotation  # noqa: F401
import store.core_tables  # noqa: F401
import store.edge_decisions  # noqa: F401
import store.explanations  # noqa: F401
import store.extraction  # noqa: F401
import store.llm_cache  # noqa: F401
import store.llm_endpoints  # noqa: F401
import store.model_speed  # noqa: F401
import store.people  # noqa: F401
import store.review  # noqa: F401
import store.review_views  # noqa: F401
import store.skill_trust  # noqa: F401
import store.thresholds  # noqa: F401
