"""The statements that prepare the Postgres database a local Dagster cluster keeps its instance in (runs, event
logs, schedules): a login role and a fresh database it owns. They are text only: ``pipeline/ops/cluster.py`` runs
each through ``psql`` as the postgres superuser. Names are vramlab's own constants; the password is quoted here."""

from __future__ import annotations


def role_exists(user: str) -> str:
    """A statement that prints ``1`` when the role exists, nothing otherwise."""
    return f"SELECT 1 FROM pg_roles WHERE rolname = '{user}'"


def login_role(user: str, password: str, *, exists: bool) -> str:
    """Create the role (or, when it ``exists``, reset it) with this password."""
    verb = "ALTER" if exists else "CREATE"
    quoted = password.replace("'", "''")
    return f"{verb} ROLE {user} LOGIN PASSWORD '{quoted}'"


def drop_database(name: str) -> str:
    return f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"


def create_database(name: str, owner: str) -> str:
    return f"CREATE DATABASE {name} OWNER {owner}"
