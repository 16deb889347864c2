"""A progress display on standard error for commands that can take more than a moment.

Shown only when standard error is a terminal: piped or redirected output, CI logs and tests
that read stderr see nothing of it. `rich` draws it (a spinner, the step, a bar when the total
is known, the time spent) and clears it when the step is done, so a terminal keeps only what
the command printed. rich is imported only for a terminal: a scripted run pays nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TextIO

__all__ = ["Progress", "progress"]


class Progress(Protocol):
    def update(self, description: str | None = None, *, completed: float | None = None) -> None: ...


class _Silent:
    def update(self, description: str | None = None, *, completed: float | None = None) -> None:
        """Nothing to show: standard error is not a terminal."""


class _Shown:
    def __init__(self, bar: Any, task: Any) -> None:
        self._bar = bar
        self._task = task

    def update(self, description: str | None = None, *, completed: float | None = None) -> None:
        self._bar.update(self._task, description=description, completed=completed)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # replaced or closed stream
        return False


@contextmanager
def progress(
    description: str, *, total: float | None = None, stream: TextIO | None = None
) -> Iterator[Progress]:
    """Show `description` (and a bar out of `total`, when known) while the block runs."""
    stream = sys.stderr if stream is None else stream
    if not _is_terminal(stream):
        yield _Silent()
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.progress import Progress as Bar

    columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    columns.append(TimeElapsedColumn())
    with Bar(*columns, console=Console(file=stream), transient=True) as bar:
        yield _Shown(bar, bar.add_task(description, total=total))
