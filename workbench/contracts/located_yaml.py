"""YAML loading that remembers line numbers, so contract errors can say where they are.

``load_located(text)`` returns plain-looking data whose mappings are ``LocatedMap`` (a dict
with ``line`` and ``key_lines``) and whose sequences are ``LocatedList`` (a list with
``line`` and ``item_lines``). Duplicate keys, which PyYAML silently overwrites, are reported.
"""

from __future__ import annotations

from typing import Any

import yaml

from workbench.errors import WorkbenchError
from workbench.inputs.yamlio import BoundedSafeLoader, yaml_problem


class LocatedMap(dict):
    """A mapping with the 1-based line it starts on and the line of each key."""

    line: int = 0
    key_lines: dict[Any, int]


class LocatedList(list):
    """A sequence with the 1-based line it starts on and the line of each item."""

    line: int = 0
    item_lines: list[int]


class YamlSyntaxError(WorkbenchError, ValueError):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


class _Loader(BoundedSafeLoader):
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[str, int]] = []


def _construct_map(loader: _Loader, node: yaml.MappingNode):
    data = LocatedMap()
    data.line = node.start_mark.line + 1
    data.key_lines = {}
    yield data
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            key = str(key)
        line = key_node.start_mark.line + 1
        if key in data:
            loader.duplicates.append((str(key), line))
        data[key] = loader.construct_object(value_node, deep=True)
        data.key_lines[key] = line


def _construct_seq(loader: _Loader, node: yaml.SequenceNode):
    data = LocatedList()
    data.line = node.start_mark.line + 1
    data.item_lines = [child.start_mark.line + 1 for child in node.value]
    yield data
    data.extend(loader.construct_object(child, deep=True) for child in node.value)


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def load_located(text: str) -> tuple[Any, list[tuple[str, int]]]:
    """Parse one YAML document; returns ``(data, duplicate_keys)``.

    Raises ``YamlSyntaxError`` (with the line) when the text is not valid YAML.
    """
    loader = None
    try:
        loader = _Loader(text)  # checks the characters: may raise ReaderError
        # Bounded before construction: an alias bomb is refused while it is still a small
        # graph of shared nodes, before any expanded value (or its repr) exists.
        node = loader.bounded_node()
        data = None if node is None else loader.construct_document(node)
    except (yaml.YAMLError, RecursionError) as exc:
        problem, line = yaml_problem(exc, text)
        raise YamlSyntaxError(f"invalid YAML: {problem}", line) from None
    finally:
        if loader is not None:
            loader.dispose()
    return data, loader.duplicates
