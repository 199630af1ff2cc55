"""The autotuner (``ws.autotune``; docs/autotune.md): chooses a static configuration per tuning
key by compiling candidates in parallel, dropping those that cannot run, timing the rest, and
keeping the winner on disk.

- ``autotune.py``: the decorator and the ``Tuned`` object (key, memory, disk record, call);
- ``search.py``: one tuning run (strategies, budget) and ``COUNTS``;
- ``configs.py``: a configuration's fields and text (``features``, ``config_text``);
- ``capture.py``: a candidate's launches recorded without running (its compile step);
- ``resources.py``: the compiler's resource report and the launch-limit checks;
- ``workers.py``: worker processes and the watchdog; ``portable.py``: what travels to them;
- ``devices.py``: the GPUs a run times on (one timing worker per GPU);
- ``timing.py``: timers; ``records.py``: winners on disk; ``report.py``: reports, progress.
"""
from .autotune import Tuned, autotune, default_key
from .records import all_records, clear
from .report import Candidate, TuneReport
from .resources import KernelResources, Resources, launch_problems
from .configs import config_text, features
from .search import COUNTS
from .timing import CudaEventTimer, WallTimer

__all__ = ["autotune", "Tuned", "default_key", "COUNTS", "Candidate", "TuneReport",
           "Resources", "KernelResources", "launch_problems", "CudaEventTimer", "WallTimer",
           "features", "config_text", "all_records", "clear"]
