"""Issue 45: the role matrix, re-run. Every command that writes is run as every kind of
identity (each role of the roster, a name not on it, nobody) on a throw-away database
(``WORKBENCH_DB`` in a temporary folder): it succeeds exactly when the role table allows its
actions, and a refused command leaves every table's row count (and workbench.toml) as it was.
``bench/role_matrix.py`` prints the same matrix as a table."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.identity.roles import may

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo"
CASE = "mor-001-delay-not-yet-late"

# The roster: one person per role; "mallory" is on no roster; None passes no --as at all.
PEOPLE = {"root": "admin", "rita": "reviewer", "al": "analyst", "ann": "annotator",
          "otto": "author", "vic": "viewer"}
IDENTITIES = [*PEOPLE, "mallory", None]


def commands(tmp: Path) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """command -> (arguments, the role-table actions it needs)."""
    bad_labels = tmp / "flipped.jsonl"  # the gold labels of demo, flipped: what --store overwrote
    return {
        "import": (("import", str(DEMO / "index.json"), "--author", "x"), ("edit graphs",)),
        "import-cases": (("import-cases", str(bad_labels), "--dataset", "demo"), ("import cases",)),
        "import-traces": (("import-traces", str(DEMO / "traces_cdg.jsonl"), "--dataset", "demo",
                           "--run-id", "again"), ("store audit results",)),
        "audit --store": (("audit", "--strategy", "cdg", "--no-judge", "--index",
                           str(DEMO / "index.json"), "--cases", str(bad_labels), "--store", "demo",
                           "--out", str(tmp / "audit.jsonl")),
                          ("import cases", "store audit results")),
        "graph edit": (("graph", "edit", "airline-policy", "--base-version", "1", "--set",
                        "AIR-R001", "action", "something else", "--note", "matrix"),
                       ("edit graphs",)),
        "review decide": (("review", "decide", "--dataset", "demo", "--case", CASE, "--strategy",
                           "cdg", "--run", "demo-cdg", "--decision", "confirm"), ("decide reviews",)),
        "review undo": (("review", "undo", "--dataset", "demo"), ("decide reviews",)),
        "annotate label": (("annotate", "label", "--skill", "airline-policy", "--rule", "AIR-R001",
                            "--value", "correct"), ("label",)),
        "people add": (("people", "add", "newbie", "--role", "viewer"), ("manage people",)),
        "people remove": (("people", "remove", "vic"), ("manage people",)),
        "model set": (("model", "set", "judge", "temperature=0.3"), ("change settings",)),
        "db upgrade": (("db", "upgrade"), ("change settings",)),
    }


def counts(db: Path, config: Path) -> dict[str, object]:
    """Each table's (row count, digest of its rows): an overwrite in place (a case stored
    again with a flipped gold label) changes the digest though not the count."""
    found: dict[str, object] = {}
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            rows = conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid').fetchall()
            found[table] = (len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()[:12])
    found["workbench.toml"] = hashlib.sha256(config.read_bytes()).hexdigest()[:12]
    return found


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> Path:
    return seed(tmp_path_factory.mktemp("matrix") / "seed.db")


def seed(db: Path) -> Path:
    """The demo workspace and the roster, made as the single user before roles applied."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WORKBENCH_DB", str(db))
        mp.delenv("WORKBENCH_USER", raising=False)
        assert main(["import", str(DEMO / "index.json")]) == 0
        assert main(["import-cases", str(DEMO / "cases.jsonl"), "--dataset", "demo"]) == 0
        assert main(["import-traces", str(DEMO / "traces_cdg.jsonl"), "--dataset", "demo",
                     "--run-id", "demo-cdg"]) == 0
        assert main(["people", "add", "root", "--role", "admin", "--no-password"]) == 0
        for name, role in PEOPLE.items():
            if name != "root":
                assert main(["people", "add", name, "--role", role, "--as", "root"]) == 0
    return db


def run_matrix(seeded: Path, tmp: Path, monkeypatch) -> list[dict]:
    """One row per identity and command: allowed by the table, exit code, rows changed."""
    flipped = tmp / "flipped.jsonl"
    flipped.write_text("".join(
        line.replace('"label": "negative"', '"label": "POS"').replace(
            '"label": "positive"', '"label": "negative"').replace('"label": "POS"',
                                                                    '"label": "positive"')
        for line in (DEMO / "cases.jsonl").read_text().splitlines(keepends=True)))
    rows = []
    for who in IDENTITIES:
        db, config = tmp / f"{who}.db", tmp / f"{who}.toml"
        with sqlite3.connect(seeded) as src, sqlite3.connect(db) as dst:
            src.backup(dst)  # WAL and all: a file copy could miss what is still in -wal
        config.write_text("[roles.judge]\nmodel = \"embedded\"\n")
        monkeypatch.setenv("WORKBENCH_DB", str(db))
        monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
        monkeypatch.delenv("WORKBENCH_USER", raising=False)
        role = PEOPLE.get(who or "")
        for name, (args, actions) in commands(tmp).items():
            allowed = role is not None and all(may(role, a) for a in actions)
            before = counts(db, config)
            code = main([*args, *(("--as", who) if who else ())])
            after = counts(db, config)
            rows.append({"identity": who or "(nobody)", "role": role or "-", "command": name,
                         "allowed": allowed, "exit": code,
                         "changed": sorted(k for k in after if after[k] != before.get(k))})
    return rows


def test_every_writing_command_follows_the_roster(seeded, tmp_path, monkeypatch, capsys):
    rows = run_matrix(seeded, tmp_path, monkeypatch)
    capsys.readouterr()
    bypasses = [r for r in rows if not r["allowed"] and r["exit"] == 0]
    refused_but_written = [r for r in rows if r["exit"] != 0 and r["changed"]]
    wrongly_refused = [r for r in rows if r["allowed"] and r["exit"] != 0]
    assert len(rows) == len(IDENTITIES) * 12
    assert (bypasses, refused_but_written, wrongly_refused) == ([], [], [])
    refused = [r for r in rows if r["exit"] != 0]
    assert len(refused) == sum(not r["allowed"] for r in rows)
    unchanged = {r["command"] for r in rows if r["allowed"] and not r["changed"]}
    assert unchanged <= {"import", "db upgrade"}  # the index is stored already; the schema current


def test_an_admins_people_add_needs_a_password_or_no_password(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WORKBENCH_DB", str(tmp_path / "w.db"))
    monkeypatch.delenv("WORKBENCH_USER", raising=False)
    assert main(["people", "add", "ada", "--role", "admin"]) == 2
    err = capsys.readouterr().err
    assert "ada would be an admin without a password" in err and "--password-env" in err
    assert "--no-password" in err
    assert main(["people", "list"]) == 0 and "roster is empty" in capsys.readouterr().out
    monkeypatch.setenv("ADA_PW", "correct horse")
    assert main(["people", "add", "ada", "--role", "admin", "--password-env", "ADA_PW"]) == 0
    # Changing the role of someone with a password keeps it: no flag needed.
    assert main(["people", "add", "bob", "--role", "viewer", "--as", "ada"]) == 0
    assert main(["people", "add", "bob", "--role", "admin", "--as", "ada"]) == 2
    assert main(["people", "add", "bob", "--role", "admin", "--no-password", "--as", "ada"]) == 0
    assert "bob is an admin without a password" in capsys.readouterr().err
    from store.db import make_engine
    from store.people import passwordless_admins

    assert passwordless_admins(make_engine()) == ["bob"]
    assert main(["people", "add", "ada", "--role", "admin", "--as", "ada"]) == 0  # keeps hers


def test_the_last_admin_cannot_demote_themself(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WORKBENCH_DB", str(tmp_path / "w.db"))
    monkeypatch.delenv("WORKBENCH_USER", raising=False)
    assert main(["people", "add", "ada", "--role", "admin", "--no-password"]) == 0
    assert main(["people", "add", "ann", "--role", "annotator", "--as", "ada"]) == 0
    capsys.readouterr()
    for role in ("viewer", "reviewer"):
        assert main(["people", "add", "ada", "--role", role, "--as", "ada"]) == 2
        err = capsys.readouterr().err
        assert "ada is the last admin" in err and "make someone else an admin first" in err
    main(["people", "list"])
    assert "ada\tadmin" in capsys.readouterr().out
    # With a second admin, the first may step down.
    assert main(["people", "add", "ann", "--role", "admin", "--no-password", "--as", "ada"]) == 0
    assert main(["people", "add", "ada", "--role", "viewer", "--as", "ada"]) == 0


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1?%6Bey=s3cr3tvalue",
                                 "http://127.0.0.1:8000/v1?api%2Dkey=s3cr3tvalue",
                                 "http://127.0.0.1:8000/v1?%256Bey=s3cr3tvalue",
                                 "http://user%3As3cr3tvalue%40127.0.0.1:8000/v1"])
def test_model_set_decodes_an_address_before_looking_for_credentials(tmp_path, monkeypatch,
                                                                      capsys, url):
    config = tmp_path / "workbench.toml"
    config.write_text("[roles.judge]\nmodel = \"embedded\"\n")
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    monkeypatch.setenv("WORKBENCH_DB", str(tmp_path / "none.db"))
    assert main(["model", "set", "judge", f"api_base={url}"]) == 2
    err = capsys.readouterr().err
    assert "holds credentials" in err and "s3cr3t" not in err
    assert "s3cr3t" not in config.read_text()
    assert not (tmp_path / "none.db").exists()  # asking the roster made no database


def test_model_set_needs_a_scheme(tmp_path, monkeypatch, capsys):
    config = tmp_path / "workbench.toml"
    config.write_text("[roles.judge]\nmodel = \"embedded\"\n")
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    monkeypatch.setenv("WORKBENCH_DB", str(tmp_path / "none.db"))
    assert main(["model", "set", "judge", "api_base=127.0.0.1:8000/v1"]) == 2
    assert "no scheme://" in capsys.readouterr().err
    assert main(["model", "set", "judge", "api_base=http://127.0.0.1:8000/v1"]) == 0
    assert 'api_base = "http://127.0.0.1:8000/v1"' in config.read_text()
