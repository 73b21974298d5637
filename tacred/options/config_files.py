"""Configuration files read strictly before Lightning's parser sees them: UTF-8, valid YAML, no repeated keys.

jsonargparse reports a YAML syntax error with its whole usage text and without the file's name, and keeps the
last of two repeated keys silently; here both are one-line errors naming the file and the line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tacred.errors import ConfigError, read_text


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses a mapping with a repeated key."""


def _mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} appears twice (first on line {seen[key] + 1})", key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def load_yaml(path: str | Path, what: str = "--config") -> Any:
    """Parse a YAML file strictly; any problem is a :class:`ConfigError` naming the option, file and line."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{what} {path}: " + ("is a folder, not a file" if path.is_dir() else "file not found"))
    text = read_text(path, what)
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = err.problem or err.context or "invalid YAML"
        raise ConfigError(f"{what} {path}{where}: {problem}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{what} {path}: invalid YAML ({' '.join(str(err).split())})") from None


def config_paths(argv: list[str]) -> list[str]:
    """The values given to ``--config``/``-c`` on a command line."""
    paths = []
    for i, arg in enumerate(argv):
        if arg in ("--config", "-c") and i + 1 < len(argv):
            paths.append(argv[i + 1])
        elif arg.startswith("--config="):
            paths.append(arg.split("=", 1)[1])
    return paths


def check_config_files(argv: list[str]) -> None:
    """Read every ``--config`` file strictly; the top level must be a mapping of options."""
    for value in config_paths(argv):
        if "\n" in value or value.lstrip().startswith("{"):
            continue  # an inline YAML/JSON string, which jsonargparse also accepts
        data = load_yaml(value)
        if data is not None and not isinstance(data, dict):
            raise ConfigError(f"--config {value}: expected a mapping of options, found {type(data).__name__}")
