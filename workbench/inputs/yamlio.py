"""YAML with bounds: alias expansion, nesting and integer size are checked before any value
is built, so a 400-byte "billion laughs" file fails in milliseconds instead of filling memory."""

from __future__ import annotations

import re
import sys
from typing import Any

import yaml

from workbench.inputs.decode import InputError

# Expanded size (every alias counted as a copy of what it names), in nodes plus one unit per
# 64 characters of scalar text, so aliasing one long string many times is bounded too.
# Contracts and front matter weigh a few hundred units; the alias bomb of issue 15 ~400 million.
MAX_YAML_NODES = 100_000
_CHARS_PER_UNIT = 64
MAX_YAML_DEPTH = 100


class BoundedSafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` whose :meth:`bounded_node` refuses oversized expansions and whose
    int constructor turns Python's digit limit into a located YAML error."""

    def bounded_node(self) -> yaml.Node | None:
        node = self.get_single_node()
        if node is not None:
            check_expansion(node)
        return node

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        try:
            return super().construct_yaml_int(node)
        except ValueError:
            raise yaml.constructor.ConstructorError(
                None, None, f"a number has more than {sys.get_int_max_str_digits()} digits; "
                "quote it to keep it as text", node.start_mark) from None


BoundedSafeLoader.add_constructor("tag:yaml.org,2002:int", BoundedSafeLoader.construct_yaml_int)


class YamlBoundError(yaml.MarkedYAMLError):
    pass


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_expansion(root: yaml.Node) -> None:
    """Raise YamlBoundError when the node graph, expanded, exceeds the bounds or is recursive.

    Aliases make the composed graph a DAG (or a cycle); sizes are memoised per node so the
    check costs the distinct nodes, not the expansion.
    """
    size: dict[int, int] = {}
    depth_of: dict[int, int] = {}
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    active: set[int] = set()
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            active.discard(key)
            own = 1 + (len(node.value) // _CHARS_PER_UNIT if isinstance(node, yaml.ScalarNode) else 0)
            total = own + sum(size[id(c)] for c in children)
            size[key] = total
            depth_of[key] = 1 + max((depth_of[id(c)] for c in children), default=0)
            if total > MAX_YAML_NODES:
                raise YamlBoundError(None, None, "the document (aliases expanded) is too large; "
                                     "use fewer or smaller anchors and aliases", node.start_mark)
            if depth_of[key] > MAX_YAML_DEPTH:
                raise YamlBoundError(None, None, f"nested more than {MAX_YAML_DEPTH} levels deep",
                                     node.start_mark)
            continue
        if key in size:
            continue
        if isinstance(node, yaml.ScalarNode) and _SURROGATE.search(node.value):
            # "\udc80" in a double-quoted scalar: not Unicode, and no UTF-8 writer (index
            # file, database) could store it later.
            raise YamlBoundError(None, None, "a string holds a lone surrogate escape (such as "
                                 "\\udc80); remove it or complete the surrogate pair",
                                 node.start_mark)
        if key in active:
            raise YamlBoundError(None, None, "an alias refers to a value that contains it "
                                 "(a recursive structure)", node.start_mark)
        if depth > MAX_YAML_DEPTH:
            raise YamlBoundError(None, None, f"nested more than {MAX_YAML_DEPTH} levels deep",
                                 node.start_mark)
        active.add(key)
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in children if id(c) not in size)


def refuse_duplicate_keys(root: yaml.Node, first_line: int = 1) -> None:
    """Raise YamlBoundError at the second of two equal keys in one mapping, anywhere in
    ``root`` (already bounded by :func:`check_expansion`). PyYAML keeps the last of them, so
    a second ``name:`` in a SKILL's front matter silently renamed it (issue 36); JSON files
    refuse the same (``jsonio``). Keys are equal when their tag and text are: ``1`` and
    ``'1'`` differ; merge keys (``<<``) are not keys. ``first_line``: the file's line of the
    text's first line (front matter starts on line 2)."""
    seen_nodes: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[tuple[str, str], int] = {}
            for key, _value in node.value:
                if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                    continue
                ident = (key.tag, key.value)
                if ident in first:
                    line = first[ident] + first_line
                    raise YamlBoundError(None, None, f"key {key.value[:60]!r} appears twice in "
                                         f"one mapping (first on line {line}); keep one",
                                         key.start_mark)
                first[ident] = key.start_mark.line
        stack.extend(_children(node))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def yaml_problem(exc: BaseException, text: str = "") -> tuple[str, int | None]:
    """``(message, 1-based line or None)`` of a YAML loading failure."""
    if isinstance(exc, RecursionError):
        return f"nested more than {MAX_YAML_DEPTH} levels deep", None
    if isinstance(exc, yaml.reader.ReaderError):  # raised before any mark exists
        line = text.count("\n", 0, exc.position) + 1 if text else None
        return (f"control character U+{exc.character:04X} is not allowed in YAML; remove it "
                "or write it as an escape in a double-quoted string"), line
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        return (exc.problem or exc.context or "invalid YAML"), (mark.line + 1 if mark else None)
    return str(exc), None


def load_yaml(text: str, origin: str, first_line: int = 1) -> Any:
    """One YAML document with safe tags only and the bounds above; raises InputError."""
    loader = None
    try:
        loader = BoundedSafeLoader(text)  # checks the characters: may raise ReaderError
        node = loader.bounded_node()
        if node is not None:
            refuse_duplicate_keys(node, first_line)
        return None if node is None else loader.construct_document(node)
    except (yaml.YAMLError, RecursionError) as exc:
        message, line = yaml_problem(exc, text)
        bounded = isinstance(exc, YamlBoundError | RecursionError | yaml.constructor.ConstructorError
                             | yaml.reader.ReaderError)
        raise InputError(origin, f"invalid YAML: {message}",
                         None if line is None else line + first_line - 1,
                         "" if bounded else "fix the YAML (values with ':' need quotes)") from None
    finally:
        if loader is not None:
            loader.dispose()
