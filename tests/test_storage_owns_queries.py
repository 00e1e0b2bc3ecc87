"""Storage owns every query: outside ``pipeline/storage/`` no module runs SQL or holds SQL text.

The rule, checked on every ``.py`` file under ``pipeline/`` except those under ``pipeline/storage/``, by parsing the
file (comments are not looked at):

* no call of a method named ``execute``, ``executemany`` or ``sql`` (``con.execute(...)``, ``cur.sql(...)``): a
  DuckDB query runs in a storage module, which its callers call by name with parameters;
* no string literal (f-string parts included, docstrings not) containing an upper-case SQL statement keyword:
  ``SELECT``, ``INSERT INTO``, ``CREATE [OR REPLACE] [TEMP] TABLE|VIEW|DATABASE|ROLE``, ``DROP TABLE|VIEW|DATABASE``,
  ``DELETE FROM``, ``UPDATE <name> SET``, ``COPY``, ``DESCRIBE``. Matching is case-sensitive, so prose ("select a
  GPU") passes; docstrings may name a statement when they explain one.

The data dictionary's column expressions (``pipeline/exports/tables.py``: ``CASE WHEN ...`` per published column)
are definitions of the published columns, not statements, and pass the rule.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PIPELINE = Path(__file__).resolve().parents[1] / "pipeline"
QUERY_METHODS = {"execute", "executemany", "sql"}
SQL_TEXT = re.compile(r"\b(SELECT|INSERT INTO|CREATE (OR REPLACE )?(TEMP )?(TABLE|VIEW|DATABASE|ROLE)"
                      r"|DROP (TABLE|VIEW|DATABASE)|DELETE FROM|UPDATE \w+ SET|COPY|DESCRIBE)\b")


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the string constants that are a module's, class's or function's docstring."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def offences(source: str, name: str) -> list[str]:
    """What in ``source`` (a module's text, ``name`` for the messages) breaks the rule, one line each."""
    tree = ast.parse(source, filename=name)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in QUERY_METHODS:
            found.append(f"{name}:{node.lineno}: .{node.func.attr}( call")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                and (match := SQL_TEXT.search(node.value)):
            found.append(f"{name}:{node.lineno}: SQL text {match.group(0)!r}")
    return found


def modules_outside_storage() -> list[Path]:
    storage = PIPELINE / "storage"
    return sorted(p for p in PIPELINE.rglob("*.py") if storage not in p.parents)


def test_no_query_outside_storage() -> None:
    files = modules_outside_storage()
    assert len(files) > 50  # the walk found the package, not an empty folder
    found = [o for p in files for o in offences(p.read_text(), str(p.relative_to(PIPELINE.parent)))]
    assert not found, "SQL outside pipeline/storage/ (move it into a storage module):\n" + "\n".join(found)


def test_the_rule_catches_a_query_and_its_text() -> None:
    source = '''
"""A docstring may say SELECT."""
def rows(con):
    """So may this one: SELECT count(*) FROM sizing."""
    where = "gpu_id = ?"  # plain strings without a statement keyword pass
    return con.execute(f"SELECT count(*) FROM sizing WHERE {where}", ["h100"]).fetchall()

def stream(cur, query):
    return cur.sql(query).to_arrow_reader()

CLEAR = "DELETE FROM cheapest_setups"
STAMP = """UPDATE price_observations SET eligible = true"""
HELP = "select a GPU, then copy the command"
'''
    found = offences(source, "example.py")
    assert sorted(found) == sorted([
        "example.py:6: .execute( call", "example.py:6: SQL text 'SELECT'", "example.py:9: .sql( call",
        "example.py:11: SQL text 'DELETE FROM'", "example.py:12: SQL text 'UPDATE price_observations SET'"])
