"""Shared test helpers: small hand-built policy indexes and an isolated database."""

from __future__ import annotations

import os

import pytest

from workbench.identity.roles import COMMAND_LINE

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

SOURCE = (
    "---\nname: refunds\ndescription: Order refunds and cancellations.\n---\n"
    "# Refunds\n"
    "Verify the customer's identity before discussing an order.\n"
    "An order may be cancelled only while its status is pending.\n"
    "Refund the amount paid after cancellation, minus any coupon discount.\n"
    "Never refund to a different payment method.\n"
)


def span_of(text: str, quote: str) -> dict:
    start = text.index(quote)
    return {"start": start, "end": start + len(quote)}


def refund_index_dict() -> dict:
    """A four-rule SKILL: R3 (refund) requires R2 (cancel) and R4 (payment method);
    R2 requires R1 (identity). Hand-checked closures: {R3} -> R3, R2, R4, R1."""
    s = SOURCE
    rules = [
        ("R1", "a customer asks about an order", "verify the customer's identity", "required",
         "Verify the customer's identity before discussing an order."),
        ("R2", "an order is to be cancelled", "cancel only if status is pending", "permitted",
         "An order may be cancelled only while its status is pending."),
        ("R3", "an order was cancelled", "refund the amount paid minus coupon discount", "required",
         "Refund the amount paid after cancellation, minus any coupon discount."),
        ("R4", "a refund is issued", "refund to a different payment method", "prohibited",
         "Never refund to a different payment method."),
    ]
    return {
        "format": "skillcdg/1",
        "skills": [
            {
                "name": "refunds",
                "description": "Order refunds and cancellations.",
                "source": s,
                "rules": [
                    {"id": i, "condition": c, "action": a, "modality": m, "spans": [span_of(s, q)]}
                    for i, c, a, m, q in rules
                ],
                "edges": [
                    {"source": "R3", "target": "R2", "type": "require"},
                    {"source": "R3", "target": "R4", "type": "require"},
                    {"source": "R2", "target": "R1", "type": "require"},
                ],
            }
        ],
    }


@pytest.fixture
def refund_index_data() -> dict:
    return refund_index_dict()


@pytest.fixture
def empty_db(tmp_path, monkeypatch):
    """A fresh, empty database (``WORKBENCH_DB`` points at it, as pages and commands read)."""
    from store.db import make_engine

    url = f"sqlite:///{tmp_path / 'w.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    eng = make_engine(url)
    yield eng
    eng.dispose()


@pytest.fixture
def refund_db(tmp_path, monkeypatch, refund_index_data):
    """A fresh database (``WORKBENCH_DB`` points at it) holding the refund SKILL, version 1."""
    from store import repo
    from store.db import make_engine
    from workbench.graph import PolicyIndex

    url = f"sqlite:///{tmp_path / 'refunds.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    eng = make_engine(url)
    repo.import_index(eng, PolicyIndex.from_dict(refund_index_data), actor=COMMAND_LINE)
    yield eng
    eng.dispose()


@pytest.fixture
def demo_db(tmp_path, monkeypatch):
    """A fresh database (``WORKBENCH_DB`` points at it) holding the demo SKILLs and the demo
    cases as dataset ``demo``: ``(engine, index, cases)``."""
    from pathlib import Path

    from store import audit_repo, repo
    from store.db import make_engine
    from workbench.audit import load_cases
    from workbench.graph import PolicyIndex

    demo = Path(__file__).resolve().parents[1] / "fixtures" / "demo"
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    monkeypatch.setenv("WORKBENCH_DB", url)
    eng = make_engine(url)
    index = PolicyIndex.load(demo / "index.json")
    repo.import_index(eng, index, actor=COMMAND_LINE)
    cases = load_cases(demo / "cases.jsonl")
    audit_repo.save_cases(eng, "demo", cases, actor=COMMAND_LINE)
    yield eng, index, cases
    eng.dispose()


@pytest.fixture
def engine(tmp_path):
    from store.db import make_engine

    eng = make_engine(f"sqlite:///{tmp_path / 'wb.db'}")
    yield eng
    eng.dispose()


@pytest.fixture
def spawn_safe_main(monkeypatch):
    """Make ``multiprocessing`` spawn children safe after AppTest ran a page in this process.

    Streamlit installs the last page script it ran as ``sys.modules['__main__']``; a spawned
    child re-imports ``__main__`` and would execute that page. A bare module has no file to run.
    """
    import sys
    import types

    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))


@pytest.fixture
def fork_context(spawn_safe_main):
    """A ``multiprocessing`` context whose children fork from one server process that has
    imported the CLI, the store and litellm: a child starts in milliseconds, not seconds of
    imports (crash tests with ``kill -9``, concurrent writer processes). Children get a fresh
    interpreter state apart from those imports; give them their settings explicitly."""
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["workbench.cli", "workbench.audit", "store.tables",
                                    "workbench.llm.transport", "litellm"])
    return context


@pytest.fixture(scope="session")
def pg_cluster():
    """A PostgreSQL cluster for the session (see tests/pg_cluster.py), or a skip saying why."""
    from tests.pg_cluster import REQUIRE_ENV, Cluster

    cluster = Cluster()
    try:
        cluster.start()
    except FileNotFoundError as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {exc}")
        pytest.skip(str(exc))
    yield cluster
    cluster.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """A URL of an empty database, once on SQLite and once on PostgreSQL (store tests)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'wb.db'}"
    return request.getfixturevalue("pg_cluster").fresh_database()


@pytest.fixture
def store_engine(store_url):
    from store.db import make_engine

    eng = make_engine(store_url)
    yield eng
    eng.dispose()
