"""Loaded by every service of a stack that ``bench/calls.py`` starts (on PYTHONPATH).

With ``CHIPS_BENCH_CPROFILE`` set to a directory: SIGUSR1 starts counting every Python call
of the process's main thread (cProfile), SIGUSR2 stops and writes ``<pid>.prof`` there.
Nothing happens without the variable.
"""

import os
import signal

_dir = os.environ.get("CHIPS_BENCH_CPROFILE")
if _dir:
    import cProfile

    _profile = cProfile.Profile()

    def _start(*_: object) -> None:
        _profile.enable()

    def _stop(*_: object) -> None:
        _profile.disable()
        _profile.dump_stats(os.path.join(_dir, f"{os.getpid()}.prof"))

    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
