"""Per-database pool sizes in pgbouncer.ini: read them, and rewrite only them.

PgBouncer 1.x has no console command for one database's ``pool_size``: ``SET`` covers the
``[pgbouncer]`` section only, and a database's settings change when its ``[databases]`` line
changes and PgBouncer reloads (docs/pgbouncer.md). So the agent edits the ``pool_size=``
option of the lines it tunes and nothing else: other options, comments, blank lines and
``%include`` files stay byte for byte. The file is rewritten in place (its owner, mode and
ACLs stay; the agent needs write permission on the file, not on its directory).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agents.targets.base import TargetMisconfigured

_SECTION = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]\s*$")
_ENTRY = re.compile(r'^\s*("(?:[^"]|"")+"|[^=\s]+)\s*=\s*(.*?)\s*$')
_OPTION = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*('(?:[^']|'')*'|\S+)")
_INCLUDE = re.compile(r"^\s*%include\s+(.+?)\s*$")


class IniError(Exception):
    """The ini cannot be read, has no line for a database, or cannot be written."""


@dataclass(frozen=True, slots=True)
class DatabaseLine:
    """Where one ``[databases]`` entry is written."""

    path: Path
    index: int
    name: str
    options: dict[str, str]


def _unquote(name: str) -> str:
    if len(name) >= 2 and name[0] == name[-1] == '"':
        return name[1:-1].replace('""', '"')
    return name


def parse_options(value: str) -> dict[str, str]:
    """``key=value`` options of a database line (quoted values kept quoted)."""
    return {match.group(1).lower(): match.group(2) for match in _OPTION.finditer(value)}


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines(keepends=True)
    except OSError as exc:
        raise IniError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _walk(path: Path, seen: set[Path]) -> Iterator[DatabaseLine]:
    """Database lines of ``path`` and the files it includes, in reading order."""
    resolved = path.resolve()
    if resolved in seen:
        return
    seen.add(resolved)
    section = ""
    for index, line in enumerate(_read_lines(path)):
        stripped = line.strip()
        if not stripped or stripped[0] in ";#":
            continue
        include = _INCLUDE.match(line)
        if include:
            target = Path(include.group(1))
            # PgBouncer resolves relative names from its working directory, which is
            # usually the file's own; the file's directory is the better guess here.
            yield from _walk(target if target.is_absolute() else path.parent / target, seen)
            continue
        header = _SECTION.match(line)
        if header:
            section = header.group(1).lower()
            continue
        if section != "databases":
            continue
        entry = _ENTRY.match(line)
        if entry:
            name = _unquote(entry.group(1))
            yield DatabaseLine(path, index, name, parse_options(entry.group(2)))


def database_lines(path: Path) -> dict[str, DatabaseLine]:
    """Every database's line; a later definition of the same name wins, as in PgBouncer."""
    return {line.name: line for line in _walk(path, set())}


def explicit_pool_sizes(path: Path) -> dict[str, int | None]:
    """Each database's own ``pool_size`` (``None``: it follows ``default_pool_size``)."""
    sizes: dict[str, int | None] = {}
    for name, line in database_lines(path).items():
        raw = line.options.get("pool_size")
        try:
            sizes[name] = int(raw.strip("'")) if raw is not None else None
        except ValueError:
            raise IniError(
                f"{line.path}: database {name}: pool_size={raw} is not a number"
            ) from None
    return sizes


def _with_pool_size(line: str, size: int | None) -> str:
    """``line`` with its ``pool_size`` option set to ``size`` (removed when ``None``)."""
    body, newline = (line[:-1], "\n") if line.endswith("\n") else (line, "")
    for match in _OPTION.finditer(body):
        if match.group(1).lower() == "pool_size":
            start, end = match.span()
            if size is None:
                before = body[:start].rstrip()
                after = body[end:].lstrip()
                body = f"{before} {after}".rstrip() if after else before
            else:
                body = f"{body[:start]}pool_size={size}{body[end:]}"
            return body + newline
    if size is None:
        return line
    return f"{body.rstrip()} pool_size={size}{newline}"


def _rewrite(path: Path, text: str) -> None:
    try:
        with path.open("r+") as stream:
            stream.write(text)
            stream.truncate()
            stream.flush()
            os.fsync(stream.fileno())
    except OSError as exc:
        raise IniError(
            f"cannot write {path}: {exc.strerror or exc} (the agent's user needs write "
            "permission on the file to change per-database pool sizes)"
        ) from exc


def set_pool_sizes(path: Path, sizes: Mapping[str, int | None]) -> None:
    """Set (or with ``None`` remove) ``pool_size`` on the lines of ``sizes``' databases.

    Raises :class:`IniError`, changing nothing, when a database has no line of its own
    (e.g. it comes from the ``*`` fallback entry) or a file cannot be read.
    """
    lines = database_lines(path)
    missing = sorted(name for name in sizes if name not in lines)
    if missing:
        raise IniError(
            f"{path}: no [databases] line for {', '.join(missing)} (a database served by the "
            "'*' fallback entry has no pool_size of its own)"
        )
    edits: dict[Path, dict[int, int | None]] = {}
    for name, size in sizes.items():
        line = lines[name]
        edits.setdefault(line.path, {})[line.index] = size
    new_texts: dict[Path, str] = {}
    for file, changes in edits.items():
        content = _read_lines(file)
        for index, size in changes.items():
            content[index] = _with_pool_size(content[index], size)
        new_texts[file] = "".join(content)
    for file, text in new_texts.items():
        _rewrite(file, text)


def tuned_pool_file(path: Path, databases: Sequence[str], *, writable: bool) -> Path:
    """``path``, checked for tuning ``databases``' own pool sizes: readable, a line of its
    own for each, and writable when ``writable``. Raises
    :class:`~agents.targets.base.TargetMisconfigured` saying what to fix."""
    try:
        lines = database_lines(path)
    except IniError as exc:
        raise TargetMisconfigured(
            f"per-database pool sizes need pgbouncer.ini: {exc}; set [target.pgbouncer] config_file"
        ) from exc
    missing = [name for name in databases if name not in lines]
    if missing:
        raise TargetMisconfigured(
            f"{path}: no [databases] line of their own for {', '.join(missing)}: "
            "their pool_size cannot be set"
        )
    if writable and not os.access(path, os.W_OK):
        raise TargetMisconfigured(
            f"{path} is not writable by this user: per-database pool sizes are changed "
            "there (give the agent's user write permission on the file)"
        )
    return path
