"""Evaluate the CRDs' CEL rules in Python with the semantics the apiserver gives them.

The apiserver's CEL environment adds Kubernetes libraries to standard CEL; cel-python has the
standard part, so the string and regex functions our rules use (`find`, `split`, `lowerAscii`,
...) are registered here. Regexes use RE2, the engine behind Go's `regexp`, so a pattern matches
here exactly when it matches in the apiserver.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import celpy
import lark
import re2  # type: ignore[import-untyped]
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParser

__all__ = ["CelError", "CelProgram", "compile_rule", "search"]


class CelError(Exception):
    """A CEL expression could not be compiled or evaluated."""


@functools.lru_cache(maxsize=1024)
def _compiled_regex(pattern: str) -> Any:
    try:
        return re2.compile(pattern)
    except re2.error as exc:
        raise CelError(f"invalid regular expression {pattern!r}: {exc}") from exc


def search(pattern: str, text: str) -> bool:
    """RE2 partial match, as OpenAPI `pattern` and CEL `matches` use it."""
    return _compiled_regex(pattern).search(text) is not None


def _find(text: celtypes.StringType, pattern: celtypes.StringType) -> celtypes.StringType:
    match = _compiled_regex(str(pattern)).search(str(text))
    return celtypes.StringType(match.group(0) if match else "")


def _find_all(
    text: celtypes.StringType, pattern: celtypes.StringType, limit: Any = None
) -> celtypes.ListType:
    found = [m.group(0) for m in _compiled_regex(str(pattern)).finditer(str(text))]
    if limit is not None and int(limit) >= 0:
        found = found[: int(limit)]
    return celtypes.ListType([celtypes.StringType(s) for s in found])


def _split(
    text: celtypes.StringType, sep: celtypes.StringType, limit: Any = None
) -> celtypes.ListType:
    value, separator = str(text), str(sep)
    count = -1 if limit is None else int(limit)
    if count == 0:
        return celtypes.ListType([])
    if separator == "":
        parts = list(value)
        if count > 0 and len(parts) > count:
            parts = [*parts[: count - 1], "".join(parts[count - 1 :])]
    else:
        parts = value.split(separator, count - 1 if count > 0 else -1)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _lower_ascii(text: celtypes.StringType) -> celtypes.StringType:
    return celtypes.StringType("".join(c.lower() if c.isascii() else c for c in str(text)))


def _upper_ascii(text: celtypes.StringType) -> celtypes.StringType:
    return celtypes.StringType("".join(c.upper() if c.isascii() else c for c in str(text)))


def _replace(
    text: celtypes.StringType, old: celtypes.StringType, new: celtypes.StringType, n: Any = None
) -> celtypes.StringType:
    count = -1 if n is None else int(n)
    return celtypes.StringType(str(text).replace(str(old), str(new), count))


def _trim(text: celtypes.StringType) -> celtypes.StringType:
    return celtypes.StringType(str(text).strip())


def _join(items: celtypes.ListType, sep: Any = None) -> celtypes.StringType:
    return celtypes.StringType(("" if sep is None else str(sep)).join(str(i) for i in items))


def _substring(text: celtypes.StringType, start: Any, end: Any = None) -> celtypes.StringType:
    value = str(text)
    first, last = int(start), len(value) if end is None else int(end)
    if not 0 <= first <= last <= len(value):
        raise CelError(f"substring({first}, {last}) out of range for a string of {len(value)}")
    return celtypes.StringType(value[first:last])


def _index_of(container: Any, item: Any, offset: Any = None) -> celtypes.IntType:
    if isinstance(container, celtypes.ListType):
        for i, element in enumerate(container):
            if element == item:
                return celtypes.IntType(i)
        return celtypes.IntType(-1)
    return celtypes.IntType(str(container).find(str(item), 0 if offset is None else int(offset)))


def _last_index_of(container: Any, item: Any) -> celtypes.IntType:
    if isinstance(container, celtypes.ListType):
        for i in range(len(container) - 1, -1, -1):
            if container[i] == item:
                return celtypes.IntType(i)
        return celtypes.IntType(-1)
    return celtypes.IntType(str(container).rfind(str(item)))


def _char_at(text: celtypes.StringType, index: Any) -> celtypes.StringType:
    value, i = str(text), int(index)
    if not 0 <= i <= len(value):
        raise CelError(f"charAt({i}) out of range for a string of {len(value)}")
    return celtypes.StringType(value[i : i + 1])


def _matches(text: celtypes.StringType, pattern: celtypes.StringType) -> celtypes.BoolType:
    return celtypes.BoolType(search(str(pattern), str(text)))


# The Kubernetes CEL extensions our rules may use; each takes and returns CEL values.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "find": _find,
    "findAll": _find_all,
    "split": _split,
    "lowerAscii": _lower_ascii,
    "upperAscii": _upper_ascii,
    "replace": _replace,
    "trim": _trim,
    "join": _join,
    "substring": _substring,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "charAt": _char_at,
    "matches": _matches,
}

_ENV: celpy.Environment | None = None
_ENV_LOCK = threading.Lock()


def parser_cache_file() -> Path | None:
    """Where the built CEL parser is kept between runs: `$XDG_CACHE_HOME/karpy` (or
    `~/.cache/karpy`); None when that cannot be created (a read-only home), and then every
    process builds its own."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base, "karpy")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(folder, os.W_OK):
        return None
    version = f"{lark.__version__}-py{sys.version_info[0]}{sys.version_info[1]}"
    return folder / f"cel-parser-lark-{version}.cache"


def _build_parser() -> lark.Lark:
    """cel-python's CEL grammar with cel-python's own options, built once and then read back
    from `parser_cache_file()`: building the LALR tables takes about a quarter of a second at
    every start, reading them a few milliseconds. Lark checks the cache against a digest of
    the grammar, the options and its own version, and rebuilds when any of them changed."""
    grammar = (Path(celpy.__file__).parent / "cel.lark").read_text()
    cache = parser_cache_file()
    return lark.Lark(
        grammar,
        parser="lalr",
        start="expr",
        debug=True,
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
        tree_class=lark.Tree,
        cache=str(cache) if cache is not None else False,
    )


class _ParserOnDemand:
    """Holds cel-python's parser slot until a rule must really be parsed: a run whose rules'
    syntax trees are all in `_tree_cache_folder()` never reads the LALR tables."""

    def parse(self, text: str) -> lark.Tree[Any]:
        parser = _build_parser()
        CELParser.CEL_PARSER = parser
        return parser.parse(text)


def _environment() -> celpy.Environment:
    """The CEL environment, made at the first compile (callers hold `_ENV_LOCK`): importing
    this module costs nothing until a rule is compiled, and the parser is built (or read
    from its cache) only when a rule's syntax tree is not cached."""
    global _ENV
    if _ENV is None:
        if CELParser.CEL_PARSER is None:
            CELParser.CEL_PARSER = cast(lark.Lark, _ParserOnDemand())
        _ENV = celpy.Environment()
    return _ENV


# Bumped when `_build_parser`'s options change the trees it makes.
_TREE_FORMAT = b"1"


@functools.lru_cache(maxsize=1)
def _tree_cache_folder() -> Path | None:
    """Where each rule's syntax tree is kept between runs, beside the parser's cache: parsing
    the dozen or so rules a NodePool meets takes a few hundredths of a second at every start
    (the parser's lexer compiles its regexes as it goes), reading their trees back a few
    milliseconds. The folder's name is a digest of the grammar, Lark's and Python's versions:
    a tree is only read back by the parser that would have made it."""
    parser_file = parser_cache_file()
    if parser_file is None:
        return None
    grammar = (Path(celpy.__file__).parent / "cel.lark").read_bytes()
    key = hashlib.sha256(
        b"|".join((grammar, lark.__version__.encode(), sys.version.encode(), _TREE_FORMAT))
    ).hexdigest()
    return parser_file.parent / f"cel-trees-{key[:16]}"


def _syntax_tree(env: celpy.Environment, expression: str) -> lark.Tree[Any]:
    """The rule's syntax tree, read from `_tree_cache_folder()` or parsed (and then kept)."""
    folder = _tree_cache_folder()
    if folder is None:
        return env.compile(expression)
    path = folder / f"{hashlib.sha256(expression.encode()).hexdigest()[:32]}.pickle"
    try:
        with path.open("rb") as f:
            kept, tree = pickle.load(f)
        if kept == expression and isinstance(tree, lark.Tree):
            return tree
    except Exception:  # absent, or unreadable: parse it again
        pass
    tree = env.compile(expression)
    try:
        folder.mkdir(exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
        with partial.open("wb") as f:
            pickle.dump((expression, tree), f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(partial, path)
    except OSError:
        pass  # a read-only cache: parse it again next time
    return tree


class CelProgram:
    """A compiled rule, evaluated against `self` (and `oldSelf` for transition rules)."""

    def __init__(self, expression: str) -> None:
        self.expression = expression
        try:
            with _ENV_LOCK:
                env = _environment()
                ast = _syntax_tree(env, expression)
                self._runner = env.program(ast, functions=FUNCTIONS)
        except Exception as exc:
            raise CelError(f"cannot compile CEL rule {expression!r}: {exc}") from exc

    def evaluate(self, self_value: Any, old_value: Any = None) -> bool:
        """True when the rule holds; raises CelError when evaluation fails (e.g. a missing key)."""
        activation: dict[str, Any] = {"self": json_to_cel(self_value)}
        if old_value is not None:
            activation["oldSelf"] = json_to_cel(old_value)
        try:
            result = self._runner.evaluate(activation)
        except Exception as exc:
            raise CelError(_describe(exc)) from exc
        if isinstance(result, Exception):
            raise CelError(_describe(result))
        if not isinstance(result, celtypes.BoolType | bool):
            raise CelError(f"rule returned {type(result).__name__}, not a bool")
        return bool(result)


def _describe(exc: BaseException) -> str:
    """A short reason like the apiserver's (`no such key: values`)."""
    args = cast(tuple[Any, ...], getattr(exc, "args", ()))
    text = str(args[0]) if args else str(exc)
    if len(args) >= 3 and "invalid literal for int()" in str(args[2]):
        return "type conversion error from 'string' to 'int'"
    if text.startswith("no such member in mapping: "):
        return "no such key: " + text.removeprefix("no such member in mapping: ").strip("'")
    return text


@functools.lru_cache(maxsize=1024)
def compile_rule(expression: str) -> CelProgram:
    """Compile once per distinct expression."""
    return CelProgram(expression)
