"""The Kubernetes CEL extensions our rules rely on behave as in the apiserver."""

from __future__ import annotations

from typing import Any

import lark
import pytest

from karpy.apis.cel import CelError, compile_rule


@pytest.mark.parametrize(
    ("rule", "self_value", "expected"),
    [
        ('self.find("^([^/]+)").endsWith("karpenter.sh")', "karpenter.sh/x", True),
        ('self.find("^([^/]+)").endsWith("karpenter.sh")', "sub.karpenter.sh/x", True),
        ('self.find("^([^/]+)").endsWith("karpenter.sh")', "example.com/x", False),
        ('self.find("[0-9]+") == ""', "abc", True),
        ("self.findAll('[0-9]') == ['1', '2']", "a1b2", True),
        ("self.split('@')[1] == 'latest'", "al2023@latest", True),
        ("self.split('/').size() == 1", "no-slash", True),
        ("self.lowerAscii() == 'abc'", "AbC", True),
        ("self.upperAscii() == 'ABC'", "abc", True),
        ("self.replace('a', 'b') == 'bbb'", "aba", True),
        ("self.trim() == 'x'", "  x ", True),
        ("self.substring(1, 3) == 'bc'", "abcd", True),
        ("self.indexOf('c') == 2", "abcd", True),
        ("self.lastIndexOf('a') == 2", "aba", True),
        ("self.charAt(1) == 'b'", "abc", True),
        ("['a', 'b'].join('-') == 'a-b'", "", True),
        ("self.matches('^[a-z0-9]+@.+$')", "al2@x", True),
        ("self.matches('^[a-z]+@.+$')", "al2", False),
        ("self.all(k, k != '' && self[k] != '')", {"a": "b"}, True),
        ("self.all(k, k != '' && self[k] != '')", {"a": ""}, False),
        ("self.filter(x, has(x.r) ? x.r == true : false).size() <= 1", [{"r": True}, {}], True),
        ("self.exists_one(x, x == 1)", [1, 2, 1], False),
    ],
)
def test_functions(rule: str, self_value: Any, expected: bool) -> None:
    assert compile_rule(rule).evaluate(self_value) is expected


def test_transition_rule_sees_old_self() -> None:
    rule = compile_rule("self.kind == oldSelf.kind")
    assert rule.evaluate({"kind": "A"}, {"kind": "A"})
    assert not rule.evaluate({"kind": "A"}, {"kind": "B"})


def test_missing_key_is_an_evaluation_error_like_the_apiserver() -> None:
    with pytest.raises(CelError, match="no such key: values"):
        compile_rule("self.values.size() != 0").evaluate({})


def test_bad_int_conversion_is_reported_as_in_the_apiserver() -> None:
    with pytest.raises(CelError, match="type conversion error from 'string' to 'int'"):
        compile_rule("int(self) >= 0").evaluate("two")


def test_non_boolean_result_is_an_error() -> None:
    with pytest.raises(CelError, match="not a bool"):
        compile_rule("self.size()").evaluate("abc")


def test_syntax_errors_fail_at_compile_time() -> None:
    with pytest.raises(CelError, match="cannot compile"):
        compile_rule("self.(")


def test_compiled_rules_are_cached() -> None:
    assert compile_rule("self == 1") is compile_rule("self == 1")


def _crd_rules() -> list[str]:
    """Every CEL rule of every CRD karpy ships."""
    import yaml

    from karpy.apis.crds import render_all

    rules: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            rules.extend(v["rule"] for v in node.get("x-kubernetes-validations") or ())
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for doc in yaml.safe_load_all(render_all()):
        walk(doc)
    return rules


def test_cached_parser_parses_every_crd_rule_as_cel_python_does(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parser karpy builds (and reads back from its cache file) gives the same trees as
    the one cel-python builds itself, for every rule the CRDs carry."""
    from celpy.celparser import CELParser

    from karpy.apis import cel

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache = cel.parser_cache_file()
    assert cache is not None and cache.parent == tmp_path / "karpy"
    built = cel._build_parser()
    assert cache.stat().st_size > 0
    read_back = cel._build_parser()
    monkeypatch.setattr(CELParser, "CEL_PARSER", None)
    CELParser()
    own = CELParser.CEL_PARSER
    assert own is not None
    rules = _crd_rules()
    assert len(rules) > 20
    for rule in rules:
        expected = own.parse(rule)
        assert built.parse(rule) == expected, rule
        assert read_back.parse(rule) == expected, rule


def test_parser_without_a_writable_cache_folder(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from karpy.apis import cel

    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert cel.parser_cache_file() is None
    assert cel._build_parser().parse("self.size() > 0") is not None


def test_syntax_trees_are_read_back_from_the_cache(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each rule's tree is kept beside the parser's cache and read back equal to the parsed
    one, for every rule the CRDs carry; a run whose trees are all cached needs no parser."""
    from celpy.celparser import CELParser

    from karpy.apis import cel

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cel._tree_cache_folder.cache_clear()
    monkeypatch.setattr(cel, "_ENV", None)
    monkeypatch.setattr(CELParser, "CEL_PARSER", None)
    try:
        rules = _crd_rules()
        env = cel._environment()
        parsed = [cel._syntax_tree(env, rule) for rule in rules]
        assert isinstance(CELParser.CEL_PARSER, lark.Lark)  # built for the first rule
        folder = cel._tree_cache_folder()
        assert folder is not None and folder.parent == tmp_path / "karpy"
        assert len(list(folder.glob("*.pickle"))) == len(set(rules))

        monkeypatch.setattr(cel, "_ENV", None)
        monkeypatch.setattr(CELParser, "CEL_PARSER", None)
        env = cel._environment()
        read_back = [cel._syntax_tree(env, rule) for rule in rules]
        assert read_back == parsed
        assert not isinstance(CELParser.CEL_PARSER, lark.Lark)  # never needed
        program = env.program(read_back[0], functions=cel.FUNCTIONS)
        assert program is not None
    finally:
        cel._tree_cache_folder.cache_clear()


def test_a_damaged_or_foreign_tree_file_is_parsed_again(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from karpy.apis import cel

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cel._tree_cache_folder.cache_clear()
    try:
        env = cel._environment()
        rule, other = "self.size() > 0", "self.size() > 1"
        expected = cel._syntax_tree(env, rule)
        folder = cel._tree_cache_folder()
        assert folder is not None
        (path,) = folder.glob("*.pickle")
        path.write_bytes(b"not a pickle")
        assert cel._syntax_tree(env, rule) == expected
        # a file that holds another rule's tree (a digest collision) is not taken for this one
        other_tree = cel._syntax_tree(env, other)
        for p in folder.glob("*.pickle"):
            if p != path:
                p.write_bytes(path.read_bytes())
        assert cel._syntax_tree(env, other) == other_tree
    finally:
        cel._tree_cache_folder.cache_clear()
