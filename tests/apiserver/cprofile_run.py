"""server.py with every thread under cProfile, counting each thread's CPU
time (time.thread_time), not the wall time it spends waiting on sockets.
At exit the profiles of all threads go, merged, to the pstats file named by
$CUBELET_STANDIN_PROFILE, where %p becomes the server's pid (run.sh starts
this instead of server.py when the variable is set). Read it with

    python3 -c 'import pstats; pstats.Stats("FILE").sort_stats("tottime").print_stats(30)'

Test infrastructure only: the stand-in behaves the same, slower by the
profiler's overhead.
"""

import atexit
import cProfile
import os
import pstats
import runpy
import sys
import threading
import time

OUT = os.environ["CUBELET_STANDIN_PROFILE"].replace("%p", str(os.getpid()))
_profiles = []
_lock = threading.Lock()


def _new():
    p = cProfile.Profile(time.thread_time)
    with _lock:
        _profiles.append(p)
    return p


def _start(frame, event, arg):
    # the first profile event of a new thread: its own profiler from now on
    _new().enable()


def _dump():
    with _lock:
        ps = list(_profiles)
    stats = None
    for p in ps:
        try:
            p.create_stats()
            stats = pstats.Stats(p) if stats is None else stats.add(p)
        except (TypeError, ValueError):  # a thread that never ran a call
            continue
    if stats is not None:
        stats.dump_stats(OUT)


threading.setprofile(_start)
atexit.register(_dump)
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.argv = [os.path.join(here, "server.py")] + sys.argv[1:]
_new().enable()
runpy.run_path(sys.argv[0], run_name="__main__")
