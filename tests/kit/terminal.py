"""Run a command with its standard error on a pseudo-terminal, as a person at a terminal
would, and its standard output on a pipe: what a progress display draws is read back."""

from __future__ import annotations

import errno
import os
import pty
import subprocess
import threading
from collections.abc import Mapping, Sequence


def on_a_terminal(
    argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 240
) -> tuple[int, str, str]:
    """(status, stdout, what the terminal received)."""
    leader, follower = pty.openpty()
    seen = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError as err:  # EIO: the program closed the terminal
                assert err.errno == errno.EIO
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        done = subprocess.run(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=follower,
            env=None if env is None else dict(env),
            timeout=timeout,
            check=False,
        )
    finally:
        os.close(follower)
    reader.join(timeout=30)
    os.close(leader)
    return done.returncode, done.stdout.decode(), seen.decode(errors="replace")
