"""`karpy run` under cProfile, for a look at where its event-loop thread spends CPU: SIGUSR1
starts the profile, SIGUSR2 stops it and writes `BENCH_PROFILE_OUT`."""

from __future__ import annotations

import cProfile
import os
import signal
import sys
from types import FrameType

from karpy.cli import main

_profile = cProfile.Profile()


def _start(_sig: int, _frame: FrameType | None) -> None:
    _profile.enable()


def _stop(_sig: int, _frame: FrameType | None) -> None:
    _profile.disable()
    _profile.dump_stats(os.environ.get("BENCH_PROFILE_OUT", "karpy.prof"))


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
    sys.exit(main())
