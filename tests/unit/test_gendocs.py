"""The generated reference pages cover what the code defines: every setting, every registered
metric, every flag of every subcommand, every IAM action and every interruption kind."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import gendocs

from karpy.settings import SETTINGS


def test_every_setting_is_on_the_settings_page() -> None:
    page = gendocs.settings_page()
    for spec in SETTINGS:
        assert f"| `{spec.env}` | `{spec.flag}` |" in page


ROOT = Path(__file__).resolve().parents[2]

# The metrics page imports every karpy module; that happens in a child process, so this test
# session keeps only the modules its other tests import.
_METRICS = """
import json, sys
sys.path.insert(0, "hack")
import gendocs
page = gendocs.metrics_page()
print(json.dumps({"page": page, "rows": sorted(gendocs._metric_rows())}))
"""


def test_every_registered_metric_is_on_the_metrics_page_with_its_labels() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _METRICS], cwd=ROOT, capture_output=True, text=True, check=True
    )
    out = json.loads(done.stdout)
    page: str = out["page"]
    rows = [(name, kind, tuple(labels), doc) for name, kind, labels, doc in out["rows"]]
    names = {name for name, _kind, _labels, _help in rows}
    # Karpenter's, controller-runtime's and karpy's own, from all over the code base
    for expected in (
        "karpenter_nodeclaims_created_total",
        "karpenter_pods_state",
        "karpenter_interruption_received_messages_total",
        "workqueue_depth",
        "karpy_event_loop_lag_seconds",
    ):
        assert expected in names
    for name, kind, labels, _help in rows:
        cells = ", ".join(f"`{label}`" for label in labels)
        assert f"| `{name}` | {kind} | {cells} |" in page


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    flags = {flag for action in parser._actions for flag in action.option_strings}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                flags |= _flags(child)
    return flags


def test_every_flag_of_every_subcommand_is_on_the_cli_page() -> None:
    page = gendocs.cli_page()
    flags = _flags(gendocs._parser()) - {"-h", "--help"}
    assert "--from-cluster" in flags
    for flag in flags:
        assert f"`{flag}" in page, flag


def test_every_action_of_the_iam_policy_is_on_its_page() -> None:
    page = gendocs.iam_policy_page()
    policy = json.loads(gendocs.IAM_POLICY.read_text(encoding="utf-8"))
    for statement in policy["Statement"]:
        for action in gendocs._listed(statement["Action"]):
            assert f"`{action}`" in page.split("## The policy document")[0]


def test_every_interruption_kind_that_acts_is_on_its_page() -> None:
    from karpy.cloudprovider.aws.interruption.actions import ACTIONS

    page = gendocs.interruption_page()
    for kind, action in ACTIONS.items():
        assert f"`{kind.value}` | `{action.action.value}`" in page
        assert f"`{action.notice.reason}`" in page
