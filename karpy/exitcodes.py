"""The exit statuses every `karpy` command uses, in one place so the help's table and the
commands cannot drift apart."""

from __future__ import annotations

__all__ = ["FAILURE", "INVALID", "OK", "TABLE", "UNSCHEDULABLE"]

OK = 0
FAILURE = 1
"""A runtime or API failure: the cluster or the cloud could not be read, a closed pipe."""
INVALID = 2
"""Invalid input: a bad flag, file, manifest or setting (one line on stderr names it)."""
UNSCHEDULABLE = 3
"""`--fail-on-unschedulable` and some pods stay unschedulable (the plan is still printed)."""

TABLE = f"""\
exit status:
  {OK}  success
  {FAILURE}  runtime or API failure (cluster or cloud unreachable, a closed output pipe)
  {INVALID}  invalid input (flags, files, manifests, settings); stderr names the field
  {UNSCHEDULABLE}  simulate --fail-on-unschedulable: some pods stay unschedulable"""
