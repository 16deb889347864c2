"""`karpy top`'s flags: filters read from the command line, bad values refused with exit 2."""

from __future__ import annotations

import pytest

from karpy.cli import parse
from karpy.top.command import options_of


def test_flags_make_the_filter() -> None:
    args = parse(
        [
            "top",
            "--nodepool",
            "a",
            "--nodepool",
            "b",
            "-l",
            "team=x",
            "--utilisation-below",
            "40%",
            "--cost-above",
            "$0.5",
            "--sort",
            "cost",
        ]
    )
    chosen = options_of(args)
    assert chosen.nodepools == {"a", "b"}
    assert chosen.selector is not None and chosen.selector.matches({"team": "x"})
    assert (chosen.utilisation_below, chosen.cost_above) == (0.4, 0.5)
    assert args.sort == "cost" and not args.once


@pytest.mark.parametrize(
    "argv",
    [
        ["top", "--utilisation-below", "0"],
        ["top", "--utilisation-below", "half"],
        ["top", "--cost-above", "-1"],
        ["top", "--sort", "price"],
        ["top", "-o", "csv"],
    ],
)
def test_bad_flags_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse(argv)
    assert exited.value.code == 2
    assert argv[1] in capsys.readouterr().err


def test_a_bad_selector_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    from karpy.top.command import run

    assert run(parse(["top", "--once", "-l", "a in ()"])) == 2
    assert "--selector" in capsys.readouterr().err
