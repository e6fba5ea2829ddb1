"""Imports point inward, services stay apart, and each table is written by its owner.

docs/architecture/code-style.md, Layout shows the architecture:

- the pure part of chips_common (the catalogue, every rule module, ids, configuration)
  loads no adapter; the modules are found by walking the packages, so a new rule module
  is checked without being listed, and each is imported in a fresh interpreter, so what
  another test imported cannot hide (or fake) a dependency;
- no service imports another, and no library imports a service: what two services
  share lives in libs/chips_common;
- every table has one owning service (``chips_common.db.ownership``); a service's code
  writes only its own tables, and reads another's only where that read is listed there
  with its reason.
"""

from __future__ import annotations

import ast
import functools
import importlib
import json
import pkgutil
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Table

from chips_common.db import ownership

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]

# The packages whose every module is pure, and the pure modules beside them.
PURE_PACKAGES = ["chips_common.events", "chips_common.rules"]
PURE_TOP = ["chips_common.commands", "chips_common.ids", "chips_common.tokens"]
PURE_TOP += ["chips_common.clock", "chips_common.config", "chips_common.db.ownership"]

# Top-level packages only adapters (nats/, db/, redis.py, s3.py) and service/ may load.
ADAPTER_PACKAGES = ["nats", "sqlalchemy", "alembic", "psycopg", "redis", "boto3", "fastapi"]

PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
adapters = set(json.loads(sys.argv[2]))
print(json.dumps(sorted(m for m in sys.modules if m.partition(".")[0] in adapters)))
"""


def pure_modules() -> list[str]:
    found = list(PURE_TOP)
    for name in PURE_PACKAGES:
        package = importlib.import_module(name)
        found.append(name)
        found += [m.name for m in pkgutil.walk_packages(package.__path__, name + ".")]
    return sorted(found)


def test_the_pure_modules_are_found_not_listed() -> None:
    """Every rule module in chips_common.rules is among those checked."""
    rules_dir = ROOT / "libs/chips_common/src/chips_common/rules"
    on_disk = {
        f"chips_common.rules.{p.stem}" for p in rules_dir.glob("*.py") if p.stem != "__init__"
    }
    assert len(on_disk) >= 18
    assert on_disk <= set(pure_modules())


@pytest.mark.parametrize("module", pure_modules())
def test_pure_module_loads_no_adapter(module: str) -> None:
    """Importing ``module`` alone loads none of nats, sqlalchemy or the other adapters."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, module, json.dumps(ADAPTER_PACKAGES)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [], f"{module} loads adapters"


# --- services stay apart ------------------------------------------------------------------

SERVICES = sorted(p.name for p in (ROOT / "services").iterdir() if (p / "src").is_dir())
PACKAGE = {f"chips_{svc}": svc for svc in SERVICES}


def python_files(base: Path) -> Iterator[Path]:
    yield from sorted(p for p in base.rglob("*.py") if "migrations" not in p.parts)


def imported(path: Path) -> set[str]:
    """The top-level packages ``path`` imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.partition(".")[0])
    return found


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def crossings(owner: str | None, base: Path) -> list[str]:
    """Imports under ``base`` of a service package other than ``owner``'s own."""
    wrong = []
    for path in python_files(base):
        for package in sorted(imported(path) & set(PACKAGE)):
            if PACKAGE[package] != owner:
                wrong.append(f"{shown(path)} imports {package}")
    return wrong


def test_there_are_services_to_check() -> None:
    assert set(SERVICES) == set(ownership.SERVICES)


@pytest.mark.parametrize("service", SERVICES)
def test_a_service_imports_no_other_service(service: str) -> None:
    """A service's code and its unit tests import no other service (only tests/e2e cross)."""
    assert crossings(service, ROOT / "services" / service) == []


def test_no_library_imports_a_service() -> None:
    """libs/ is below every service: it imports none of them."""
    assert crossings(None, ROOT / "libs") == []


def test_the_import_check_sees_a_crossing(tmp_path: Path) -> None:
    """The check is not blind: a gateway module importing the eventlog is caught."""
    (tmp_path / "leak.py").write_text("from chips_eventlog.rules import spaces\n")
    (tmp_path / "fine.py").write_text("import chips_gateway.ws\nfrom . import x\n")
    assert crossings("gateway", tmp_path) == ["leak.py imports chips_eventlog"]
    assert crossings(None, tmp_path) == [
        "fine.py imports chips_gateway",
        "leak.py imports chips_eventlog",
    ]


# --- who touches which table ------------------------------------------------------------

TABLE_MODULES = [
    "chips_common.db." + m.name
    for m in pkgutil.iter_modules(importlib.import_module("chips_common.db").__path__)
]


def table_variables() -> dict[str, str]:
    """Each module-level ``Table`` in chips_common.db, by variable name: its table's name."""
    found: dict[str, str] = {}
    for name in TABLE_MODULES:
        for var, value in vars(importlib.import_module(name)).items():
            if isinstance(value, Table):
                found[var] = value.name
    return found


def all_tables() -> set[str]:
    from chips_common.db.tables import metadata

    for name in TABLE_MODULES:
        importlib.import_module(name)  # every module adds its tables to the one metadata
    return set(metadata.tables)


SQL_WRITE = re.compile(r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|TRUNCATE(?:\s+TABLE)?)\s+(\w+)")
SQL_READ = re.compile(r"\b(?:FROM|JOIN)\s+(\w+)")
SQL_TEXT = re.compile(r"\b(?:SELECT|INSERT|UPDATE|DELETE|TRUNCATE)\b")
WRITE_CALLS = {"insert", "update", "delete"}


class Touches:
    """The tables one file writes and reads: through chips_common.db's Table objects (by
    the name a module imported them under, as an attribute of the module imported, or by
    a name given to one of those), written by SQLAlchemy's insert, update and delete
    under whatever name they were imported as (``pg_insert``), and through SQL written as
    text."""

    def __init__(self, source: str, variables: dict[str, str], tables: set[str]) -> None:
        self.writes: set[str] = set()
        self.reads: set[str] = set()
        tree = ast.parse(source)
        modules, names, verbs = set(), {}, set(WRITE_CALLS)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "chips_common.db"
            ):
                for alias in node.names:
                    if node.module == "chips_common.db":
                        modules.add(alias.asname or alias.name)
                    elif alias.name in variables:
                        names[alias.asname or alias.name] = variables[alias.name]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sqlalchemy"):
                verbs |= {a.asname for a in node.names if a.name in WRITE_CALLS and a.asname}

        def table(node: ast.AST) -> str | None:
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
                and node.attr in variables
            ):
                return variables[node.attr]
            if isinstance(node, ast.Name) and node.id in names:
                return names[node.id]
            return None

        # A table given a shorter name (``ds = t.device_signatures``) is the table.
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and (name := table(node.value))
            ):
                names[node.targets[0].id] = name

        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                verb = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if verb in verbs and node.args and (name := table(node.args[0])):
                    self.writes.add(name)
                if (
                    isinstance(func, ast.Attribute)
                    and func.attr in WRITE_CALLS
                    and (name := table(func.value))
                ):
                    self.writes.add(name)
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and SQL_TEXT.search(node.value)
            ):
                self.writes |= set(SQL_WRITE.findall(node.value)) & tables
                self.reads |= set(SQL_READ.findall(node.value)) & tables
            if name := table(node):
                self.reads.add(name)
        self.reads -= self.writes


@functools.cache
def touches(service: str) -> dict[str, Touches]:
    variables, tables = table_variables(), all_tables()
    return {
        shown(path): Touches(path.read_text(encoding="utf-8"), variables, tables)
        for path in python_files(ROOT / "services" / service / "src")
    }


def test_every_table_has_one_owner() -> None:
    """Each table chips_common.db defines is owned by a service, and nothing else is."""
    tables = all_tables()
    assert tables - set(ownership.OWNER) == set(), "declare an owner in db/ownership.py"
    assert set(ownership.OWNER) - tables == set(), "ownership.py names tables that do not exist"
    assert set(ownership.OWNER.values()) <= set(ownership.SERVICES)


@pytest.mark.parametrize("service", SERVICES)
def test_a_service_writes_only_its_own_tables(service: str) -> None:
    """A write to another service's table is refused unless ownership.WRITES argues it."""
    wrong = [
        f"{path} writes {table} (owned by {ownership.OWNER.get(table)})"
        for path, seen in touches(service).items()
        for table in sorted(seen.writes)
        if ownership.OWNER.get(table) != service and (service, table) not in ownership.WRITES
    ]
    assert wrong == []


@pytest.mark.parametrize("service", SERVICES)
def test_a_service_reads_another_s_table_only_where_documented(service: str) -> None:
    """Reads of the log are anyone's; any other table of another service, only as listed."""
    wrong = [
        f"{path} reads {table} (owned by {ownership.OWNER.get(table)})"
        for path, seen in touches(service).items()
        for table in sorted(seen.reads)
        if ownership.OWNER.get(table) != service
        and table not in ownership.READ_BY_ALL
        and (service, table) not in ownership.READS
    ]
    assert wrong == []


def test_the_documented_exceptions_are_all_used() -> None:
    """No stale entry: every listed read or write of another's table still happens."""
    used = set()
    for service in SERVICES:
        for seen in touches(service).values():
            used |= {(service, t) for t in seen.writes | seen.reads}
    assert set(ownership.WRITES) - used == set()
    assert set(ownership.READS) - used == set()


def test_the_table_check_sees_a_foreign_write() -> None:
    """The check is not blind: each way of writing or reading a table is seen."""
    source = """
from sqlalchemy import insert, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from chips_common.db import tables as t
from chips_common.db.search_tables import search_docs as docs
insert(t.events)
t.rm_spaces.update()
update(docs)
pg_insert(t.invites)
ds = t.device_signatures
pg_insert(ds).on_conflict_do_nothing()
raw = "DELETE FROM referee_rooms WHERE x = 1"
query = "SELECT * FROM attachments JOIN spaces ON true"
t.memberships.c.space_id
words = "from spaces the room is made"
"""
    seen = Touches(source, table_variables(), all_tables())
    assert seen.writes == {
        "events",
        "rm_spaces",
        "search_docs",
        "referee_rooms",
        "invites",
        "device_signatures",
    }
    assert seen.reads == {"attachments", "spaces", "memberships"}
