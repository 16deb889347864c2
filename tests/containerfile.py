"""Reading the Containerfile's final stage, and the command line a Kubernetes container runs.

There is no container engine on the test machines, so the image's ENTRYPOINT and CMD are read
from the Containerfile itself and combined with a Deployment's `command`/`args` the way the
kubelet does; tests then parse or run that exact command line.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CONTAINERFILE = REPO / "Containerfile"

_ARG_REF = re.compile(r"\$\{(\w+)\}|\$(\w+)")


@dataclass
class Stage:
    """One FROM ... stage: its base image and the instructions that shape how it runs."""

    base: str
    name: str | None = None
    entrypoint: list[str] | None = None
    cmd: list[str] | None = None
    user: str | None = None
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Containerfile:
    args: dict[str, str]
    stages: list[Stage]

    @property
    def final(self) -> Stage:
        return self.stages[-1]


def _instructions(text: str) -> list[tuple[str, str]]:
    """(KEYWORD, rest) per instruction, comments dropped and continuation lines joined."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        keyword, _, rest = line.partition(" ")
        out.append((keyword.upper(), rest.strip()))
    if pending:
        raise ValueError(f"Containerfile ends inside a continued line: {pending!r}")
    return out


def _exec_form(keyword: str, rest: str) -> list[str]:
    try:
        value = json.loads(rest)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{keyword} must use the exec (JSON array) form, got {rest!r}")
    return value


def _substitute(text: str, args: Mapping[str, str]) -> str:
    return _ARG_REF.sub(lambda m: args.get(m.group(1) or m.group(2), ""), text)


def parse(text: str) -> Containerfile:
    """The global ARG defaults and every stage of a Containerfile."""
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for keyword, rest in _instructions(text):
        if keyword == "ARG" and not stages:
            name, _, default = rest.partition("=")
            args[name.strip()] = default.strip()
        elif keyword == "FROM":
            words = _substitute(rest, args).split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base=words[0], name=name))
        elif not stages:
            raise ValueError(f"{keyword} before the first FROM")
        elif keyword == "ENTRYPOINT":
            stages[-1].entrypoint = _exec_form(keyword, rest)
        elif keyword == "CMD":
            stages[-1].cmd = _exec_form(keyword, rest)
        elif keyword == "USER":
            stages[-1].user = rest
        elif keyword == "ENV":
            for item in shlex.split(rest):
                key, _, value = item.partition("=")
                stages[-1].env[key] = value
    if not stages:
        raise ValueError("no FROM in the Containerfile")
    return Containerfile(args=args, stages=stages)


def load(path: Path = CONTAINERFILE) -> Containerfile:
    return parse(path.read_text())


def container_argv(container: Mapping[str, Any], stage: Stage) -> list[str]:
    """The process a Kubernetes container runs: `command` replaces the image's ENTRYPOINT (and
    drops its CMD), `args` replaces CMD."""
    command = container.get("command")
    args = container.get("args")
    if command:
        return [*command, *(args or [])]
    entrypoint = stage.entrypoint or []
    return [*entrypoint, *(args if args is not None else (stage.cmd or []))]


def container_env(container: Mapping[str, Any], field_values: Mapping[str, str]) -> dict[str, str]:
    """The container's `env`, with downward-API `fieldRef`s filled from `field_values`
    (`{"metadata.namespace": ...}`); any other source is an error, so a new one is noticed."""
    env: dict[str, str] = {}
    for item in container.get("env") or ():
        name = item["name"]
        if "value" in item:
            env[name] = str(item["value"])
            continue
        ref = (item.get("valueFrom") or {}).get("fieldRef") or {}
        path = ref.get("fieldPath")
        if path not in field_values:
            raise ValueError(f"env {name}: no value for {item.get('valueFrom')!r}")
        env[name] = field_values[path]
    return env
