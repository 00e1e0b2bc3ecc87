"""Run settings from the environment: every ``VRAMLAB_*`` variable declared once (:data:`VARIABLES`, read through
:func:`variable`), where data lives, live or replay, and the clock staleness is judged by.

- ``VRAMLAB_DATA_DIR`` is also the root a run's own config may not leave (:func:`inside_data_root`).
- ``VRAMLAB_WORKERS``: processes the CPU-bound steps fork for their work (the cheapest setups, the model files'
  price-independent part, the report's model pages; ``pipeline/compute/workers.py``).
- In replay mode every recorded observation carries its recording's capture time (``captured_at`` in the replay
  manifest; ``REPLAY_SNAPSHOT_AT``, the reference freeze, where no capture date exists), and staleness is judged as
  of ``REPLAY_SNAPSHOT_AT``: a bundled recording keeps the date it was observed and never becomes fresh by being
  loaded again. A replay series step (``replay_step``, see ``pipeline/sources/replay.py``) is judged as of its own
  time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pipeline.data_dir import DataDir

REPO_ROOT = Path(__file__).resolve().parent.parent
#: run from a checkout (the repository's top level is there) or installed from a wheel (site-packages)
IN_CHECKOUT = (REPO_ROOT / "pyproject.toml").is_file() and (REPO_ROOT / "sql").is_dir()
#: the project files of the repository's top level a run needs: the migrations, the instance and workspace config
TOP_LEVEL_FILES = ("sql", "dagster.yaml", "workspace.yaml")


def project_file(name: str) -> Path:
    """A top-level project file (:data:`TOP_LEVEL_FILES`): the file itself in a checkout; installed, the copy the
    wheel carries as package data (``pipeline/bundled/``, made by ``setup.py`` at build time)."""
    if name not in TOP_LEVEL_FILES:
        raise ValueError(f"{name!r} is not one of the project's top-level files {TOP_LEVEL_FILES}")
    if IN_CHECKOUT:
        return REPO_ROOT / name
    from importlib.resources import files

    return Path(str(files("pipeline").joinpath("bundled", name)))


def default_data_dir() -> Path:
    """``data/`` in a checkout; installed, ``$XDG_DATA_HOME/vramlab`` (``~/.local/share/vramlab``), never inside
    the package."""
    if IN_CHECKOUT:
        return REPO_ROOT / "data"
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "vramlab"


def work_dir() -> Path | None:
    """The folder child processes (daemon, webserver, Celery workers) start in: the checkout, else where we are."""
    return REPO_ROOT if IN_CHECKOUT else None
REPLAY_SNAPSHOT_AT = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)  # when shared/reference was frozen for replay


@dataclass(frozen=True)
class Variable:
    """One environment variable vramlab reads: its name, its default as it would be written in the environment
    ("" = unset; ``shown`` says what unset means where that is computed) and what it does."""

    name: str
    default: str
    meaning: str
    shown: str = ""

    def text(self) -> str:
        """The value set, else the default."""
        return os.environ.get(self.name, "").strip() or self.default

    def on(self) -> bool:
        return self.text().lower() in ("1", "true", "yes")

    def number(self) -> float:
        try:
            return float(self.text())
        except ValueError:
            raise ValueError(f"{self.name} must be a number, not {self.text()!r}") from None

    def whole(self) -> int:
        value = self.text()
        if not value.isdigit():
            raise ValueError(f"{self.name} must be a whole number >= 0, not {value!r}")
        return int(value)


#: every ``VRAMLAB_*`` variable, once: code reads them through :func:`variable`; docs/operating.md lists them
#: (``scripts/docs_variables.py`` writes the table; a test keeps it and the code's names in step with this)
VARIABLES: dict[str, Variable] = {v.name: v for v in (
    Variable("VRAMLAB_DATA_DIR", "", "the data directory; also the root a run's own config may not leave",
             "data/ in the project; installed, ~/.local/share/vramlab"),
    Variable("VRAMLAB_DB", "", "the DuckDB file", "vramlab.duckdb in the data directory"),
    Variable("VRAMLAB_LIVE", "", "1: fetch from the real sources; otherwise the bundled recordings are replayed", "off"),
    Variable("VRAMLAB_WORKERS", "", "processes the CPU-bound steps fork (1 keeps the work in the step's process)",
             "the machine's cores, at most 2"),
    Variable("VRAMLAB_FETCH_WORKERS", "32", "threads fetching price sources at once"),
    Variable("VRAMLAB_ALLOW_FOREIGN_LINKS", "", "1: symlinks in the data directory that lead out of it are meant",
             "off"),
    Variable("VRAMLAB_ALLOW_CLOCK_BEHIND", "", "1: run although the clock is behind the newest recorded fetch "
             "(`vramlab run --allow-clock-behind`)", "off"),
    Variable("VRAMLAB_HTTP_RETRIES", "3", "retries of a failed request"),
    Variable("VRAMLAB_HTTP_BACKOFF", "1", "seconds before the first retry (doubled per retry, with jitter)"),
    Variable("VRAMLAB_HTTP_TIMEOUT", "30", "seconds a read may take"),
    Variable("VRAMLAB_HTTP_MAX_RETRY_WAIT", "60", "the longest Retry-After (s) a request waits; a host asking "
             "for longer is skipped for the rest of the step"),
    Variable("VRAMLAB_HTTP_DEADLINE", "300", "seconds a request may take in all, retries and waits included"),
    Variable("VRAMLAB_SOURCE_DEADLINE", "900", "seconds a source's whole fetch may take"),
    Variable("VRAMLAB_HUB_REPLAY", "", "a Hub replay manifest to replay instead of the bundled one",
             "the bundle's"),
    Variable("VRAMLAB_DISCOVERY", "", "1: also size trending Hub models, not only the watchlist", "off"),
    Variable("VRAMLAB_DISCOVERY_LIMIT", "50", "models per Hub listing when discovering"),
    Variable("VRAMLAB_DISCOVERY_MIN_DOWNLOADS", "1000", "downloads a discovered model needs"),
    Variable("VRAMLAB_DB_LOCK_WAIT", "120", "seconds to wait for another process's DuckDB write lock"),
    Variable("VRAMLAB_DUCKDB_MEMORY_LIMIT", "512MB", "DuckDB's buffer pool cap (a DuckDB size such as 2GB)"),
    Variable("VRAMLAB_PARTS_DIR", "", "where the partitioned graph's parts live", "parts/ in the data directory"),
    Variable("VRAMLAB_KEEP_SNAPSHOTS", "5", "published snapshots kept beside latest"),
    Variable("VRAMLAB_SITE_URL", "https://studiotvai.com", "the site the model JSON's links point at"),
    Variable("VRAMLAB_REPORT_LANG", "en", "the report's language (en, de)"),
    Variable("VRAMLAB_SCHEDULE_CRON", "0 * * * *", "the hourly schedule's cron (UTC); `vramlab serve --cron`"),
    Variable("VRAMLAB_SCHEDULE_ON", "", "1: the schedule is on by default (`vramlab serve` sets it)", "off"),
    Variable("VRAMLAB_CELERY_BROKER", "", "the Redis URL of the Celery broker: defines the Celery jobs "
             "(scripts/cluster.py sets it)", "no Celery jobs"),
    Variable("VRAMLAB_UI_BIND_HOST", "", "the address the UI is bound to (`vramlab serve` sets it)"),
    Variable("VRAMLAB_UI_ALLOWED_HOSTS", "", "more Host names the UI answers (comma-separated)", "loopback only"),
    Variable("VRAMLAB_NO_UV", "", "1: tasks.py installs with pip instead of uv (read by tasks.py, before the "
             "venv exists)", "off"),
)}


def variable(name: str) -> Variable:
    """The declared variable ``name``; an undeclared name is a programming error, said at once."""
    try:
        return VARIABLES[name]
    except KeyError:
        raise KeyError(f"{name} is not declared in pipeline/settings.py VARIABLES") from None


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    db_path: Path
    replay: bool
    replay_step: str = ""  # a replay series step id; "" = the current recordings
    step_as_of: datetime | None = None  # that step's time (pipeline/sources/replay.py::series_step), set with it
    workers: int = 1  # processes the CPU-bound steps fork (pipeline/compute/workers.py)

    def as_of(self) -> datetime:
        if not self.replay:
            return datetime.now(UTC)
        if self.replay_step:
            if self.step_as_of is None:
                raise ValueError(f"replay step {self.replay_step!r} given without its time (step_as_of)")
            return self.step_as_of
        return REPLAY_SNAPSHOT_AT


def settings() -> Settings:
    data_dir = Path(variable("VRAMLAB_DATA_DIR").text() or default_data_dir())
    db = Path(variable("VRAMLAB_DB").text() or DataDir(data_dir).database)
    live = variable("VRAMLAB_LIVE").on()
    workers = variable("VRAMLAB_WORKERS").text()
    if workers and not (workers.isdigit() and int(workers) > 0):
        raise ValueError(f"VRAMLAB_WORKERS must be a positive whole number, not {workers!r}")
    return Settings(data_dir=data_dir, db_path=db, replay=not live,
                    workers=int(workers) if workers else min(2, os.cpu_count() or 1))


class ForeignLink(Exception):
    """A part of the data directory is a symlink leading outside it."""


def foreign_links(data_dir: Path) -> dict[str, str]:
    """Symlinks among the data directory's written parts (and their direct children) that resolve outside it,
    as ``{relative path: where it leads}``."""
    root = data_dir.resolve()
    layout = DataDir(data_dir)
    found: dict[str, str] = {}

    def judge(path: Path) -> None:
        if path.is_symlink():
            target = path.resolve()
            if not target.is_relative_to(root):
                found[path.relative_to(data_dir).as_posix()] = str(target)

    for folder in layout.written_folders:
        judge(folder)
    for path in layout.written_parts:
        judge(path)
        if path.is_dir() and not path.is_symlink():
            for child in path.iterdir():
                judge(child)
    return found


def check_data_dir(data_dir: Path) -> None:
    """Refuse to run on a data directory whose parts lead elsewhere through symlinks, naming each;
    ``VRAMLAB_ALLOW_FOREIGN_LINKS=1`` says the links are meant (a bigger disk mounted for ``raw/``)."""
    if variable("VRAMLAB_ALLOW_FOREIGN_LINKS").on():
        return
    links = foreign_links(data_dir)
    if links:
        named = ", ".join(f"{k} -> {v}" for k, v in sorted(links.items()))
        raise ForeignLink(f"the data directory {data_dir} has parts that are symlinks leading outside it ({named}): "
                          "a run would write there; remove the links, point VRAMLAB_DATA_DIR at the real place, or "
                          "set VRAMLAB_ALLOW_FOREIGN_LINKS=1 if they are meant")


class OutsideDataRoot(ValueError):
    """A path given in a run's config that resolves outside the data root (:func:`inside_data_root`)."""


def inside_data_root(where: str, value: str | Path, root: Settings | None = None) -> Path:
    """``value`` resolved (symlinks followed), if it lies inside the data root; else :class:`OutsideDataRoot`.

    The data root is this process's data directory (``VRAMLAB_DATA_DIR``, else ``data/``); the configured
    DuckDB file (``VRAMLAB_DB``) is allowed too, wherever it lives. It bounds what a run launched with its own
    run config (the Dagster UI's launchpad, GraphQL) may point at: a folder of the config's choosing would be
    written to, and its files loaded into the service's database. ``where`` names the config key."""
    s = root or settings()
    base = s.data_dir.resolve()
    resolved = Path(value).expanduser().resolve()
    if resolved == s.db_path.resolve() or resolved.is_relative_to(base):
        return resolved
    shown = f"{value!s}" + (f" (resolves to {resolved})" if str(resolved) != str(value) else "")
    raise OutsideDataRoot(f"run config {where} = {shown} is outside the data root {base} (VRAMLAB_DATA_DIR where "
                          "the service runs): a run may only use folders inside it; to move the data, start the "
                          "service with another VRAMLAB_DATA_DIR")


def variables_table() -> str:
    """docs/operating.md's table of the variables (``scripts/docs_variables.py`` writes it there)."""
    rows = ["| variable | default | what it does |", "|---|---|---|"]
    for v in VARIABLES.values():
        default = f"`{v.default}`" if v.default else (v.shown or "unset")
        rows.append(f"| `{v.name}` | {default} | {v.meaning} |")
    return "\n".join(rows) + "\n"
