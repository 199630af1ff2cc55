"""Kernels, a policy and a fake timer for the autotuner's tests (importable by name, so the
tuner's worker processes find them: pytest puts this folder on sys.path)."""
import numpy as np

import warpstage as ws


class Tiles:
    """A test policy: ``threads`` per CTA; ``smem`` bytes of shared memory the kernel reserves;
    ``deadlock``: every thread waits on an mbarrier nobody arrives at; ``regs``: (producer,
    consumer) setmaxnreg counts for warpgroup 0 and the others; ``spin``: the kernel loops
    forever, writing memory (a hang the simulator cannot see through: the watchdog must end
    it); ``name``: the fake timer's key."""

    def __init__(self, name, threads=64, smem=0, deadlock=False, regs=None, spin=False):
        self.name, self.threads, self.smem = name, threads, smem
        self.deadlock, self.regs, self.spin = deadlock, regs, spin

    def __repr__(self):
        return f"Tiles({self.name!r})"


@ws.kernel
def scale_kernel(cfg: ws.Static[Tiles], x: ws.Tensor, y: ws.Tensor, n: ws.Int32):
    """y = 2 x over n elements, written one element per thread."""
    if ws.static(cfg.smem > 0):
        buf = ws.smem.allocate(ws.smem.Array(ws.Uint8, (cfg.smem,)))
        buf[0] = ws.Uint8(0)
    if ws.static(cfg.deadlock):
        bar = ws.smem.allocate(ws.smem.MbarrierArray[1])
        if ws.arch.thread_idx()[0] == 0:
            bar[0].init(1)
            ws.arch.fence_mbarrier_init()
        ws.arch.sync_threads()
        bar[0].wait(0)                          # nobody arrives: a deadlock
    if ws.static(cfg.regs is not None):
        if ws.arch.thread_idx()[0] < 128:
            ws.arch.setmaxnreg_decrease(cfg.regs[0])
        else:
            ws.arch.setmaxnreg_increase(cfg.regs[1])
    if ws.static(cfg.spin):
        k = ws.Int32(0)
        while x[0] >= 0.0:                      # x[0] is 0 and nobody writes x: forever,
            k = k + 1                           # with a loop state that keeps changing
            y[1] = ws.Float32(k)
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    if i < n:
        y[i] = x[i] * 2.0


def scale(x, y, *, config):
    """A launch function: y = 2 x with ``config``'s block size."""
    n = x.shape[0]
    scale_kernel[(-(-n // config.threads),), config.threads](config, x, y, n)


def grid_for(config, x, y, n):
    return (-(-n // config.threads),)


def block_for(config, x, y, n):
    return config.threads


FAKE_MS = {"slow": 3.0, "fast": 1.0, "medium": 2.0, "huge": 0.1, "stuck": 0.2, "split": 0.3,
           "sleepy": 0.4}


class FakeTimer:
    """Runs the candidate once (so it must work) and reports FAKE_MS[config.name]."""

    def measure(self, run, config, warmup, rep):
        run()
        return FAKE_MS[config.name]


class Grid:
    """A policy with two fields for the local search: fake time = (a - 3)^2 + (b - 2)^2 + 1."""

    def __init__(self, a, b):
        self.a, self.b, self.threads = a, b, 32

    def __repr__(self):
        return f"Grid({self.a}, {self.b})"


class GridTimer:
    def measure(self, run, config, warmup, rep):
        run()
        return float((config.a - 3) ** 2 + (config.b - 2) ** 2 + 1)


def grid_scale(x, y, *, config):
    scale_kernel[(-(-x.shape[0] // 32),), 32](Tiles("grid"), x, y, x.shape[0])


def data(n=100):
    x = np.arange(n, dtype=np.float32)
    return x, np.zeros(n, np.float32)


@ws.autotune([Tiles("slow", 32), Tiles("fast", 64)], timer=FakeTimer(), jobs=1, progress=False)
def decorated(x, y, *, config):
    """The module attribute is the Tuned object; workers find the function through it."""
    scale(x, y, config=config)


class Bare:
    """A policy with no __repr__ of its own (reports show its fields, never an address)."""

    def __init__(self, name, threads=32):
        self.name, self.threads = name, threads


@ws.kernel
def broken_kernel(cfg: ws.Static[Bare], y: ws.Tensor):
    y[0] = ws.Float32(cfg.name)                 # a str: an error while tracing


CALLS = []
"""The configurations ``picky`` ran with, in order (the warm-up test reads it)."""


def picky(x, y, *, config):
    """A launch function whose behaviour depends on ``config.name``: 'host' raises in its own
    host code, 'none' launches nothing, 'kernel' launches a kernel that fails to compile; any
    other name launches scale_kernel."""
    CALLS.append(config.name)
    if config.name == "host":
        return x.shape[3]                       # an IndexError in host code
    if config.name == "none":
        return None
    if config.name == "kernel":
        broken_kernel[1, 32](config, y)
        return None
    n = x.shape[0]
    scale_kernel[(-(-n // config.threads),), config.threads](Tiles("fast", config.threads),
                                                             x, y, n)


PICKY_MS = {"fast": 1.0, "slow": 2.0, "host": 0.1, "none": 0.1, "kernel": 0.1}


class PickyTimer:
    """Runs the candidate once and reports PICKY_MS[config.name]; ``seen`` holds, per measure
    call, (config name, len(CALLS) before the run)."""

    def __init__(self):
        self.seen = []

    def measure(self, run, config, warmup, rep):
        self.seen.append((config.name, len(CALLS)))
        run()
        return PICKY_MS[config.name]


def placed(x, y, *, config):
    """``scale`` on tensors of the pretend GPU (tests/fake_gpu.py's FakeCudaArray, which has
    no ``shape``): for the per-GPU timing tests. Their workers have no GPU and need none: the
    compile step traces, assembles and records the launch without running it
    (warpstage/tune/capture.py), and DeviceLogTimer never runs the candidate."""
    n = x.array.shape[0]
    scale_kernel[(-(-n // config.threads),), config.threads](config, x, y, n)


class DeviceLogTimer:
    """Appends one line per candidate to the file named by WS_TEST_TIMER_LOG: the candidate's
    name, the CUDA_VISIBLE_DEVICES the timing worker was started with, its pid, and when the
    measurement began and ended (time.time()); takes ``hold_s`` seconds; reports
    FAKE_MS[config.name] + the ``offset`` of the GPU it ran on (``offsets``:
    CUDA_VISIBLE_DEVICES entry -> ms); a configuration named 'boom' raises; never runs the
    candidate.

    ``meet``: before its first measurement a worker leaves a marker beside the log and waits
    (at most ``meet_s`` seconds) until ``meet`` workers have left theirs, so that workers
    timing at once show overlapping first intervals whatever their start-up times, and workers
    that run one after the other do not (the first waits in vain and ends before the next
    begins)."""

    def __init__(self, hold_s=0.3, offsets=None, meet=0, meet_s=10.0):
        self.hold_s, self.offsets = hold_s, offsets or {}
        self.meet, self.meet_s, self.met = meet, meet_s, False

    def _meet(self, log):
        import glob
        import os
        import time
        open(f"{log}.arrived.{os.getpid()}", "w").close()
        end = time.time() + self.meet_s
        while len(glob.glob(f"{log}.arrived.*")) < self.meet and time.time() < end:
            time.sleep(0.01)

    def measure(self, run, config, warmup, rep):
        import os
        import time
        log = os.environ["WS_TEST_TIMER_LOG"]
        t0 = time.time()
        if self.meet and not self.met:
            self.met = True
            self._meet(log)
        time.sleep(self.hold_s)
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "-")
        with open(log, "a") as f:
            f.write(f"{config.name} {visible} {os.getpid()} {t0} {time.time()}\n")
        if config.name == "boom":
            raise RuntimeError("boom")
        return FAKE_MS[config.name] + self.offsets.get(visible, 0.0)
