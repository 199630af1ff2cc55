"""How the autotuner reports what goes wrong with a candidate (tune/report.py, search.py,
configs.py, timing.warm_up): each failure is labelled by where it happened (a kernel's compile,
the launch function's host code, a call that launches nothing, a raising ``prune``), the run
goes on, configurations print by their fields, and the first candidate timed does not pay the
process's warm-up."""
import re

import pytest

import warpstage as ws
import tune_kernels as tk

BAD = [tk.Bare("host"), tk.Bare("none"), tk.Bare("kernel")]
GOOD = [tk.Bare("slow", 32), tk.Bare("fast", 64)]


def local_picky():
    """tk.picky through a function no worker can import: the steps run in this process."""
    def picky_here(x, y, *, config):
        return tk.picky(x, y, config=config)
    return picky_here


def by_name(report):
    return {c.config.name: c for c in report.candidates}


@pytest.mark.parametrize("fn, jobs", [(lambda: tk.picky, 2), (local_picky, 1)], ids=["workers", "here"])
def test_each_failure_is_labelled_by_where_it_happened(cache_dir, fn, jobs):
    tuned = ws.autotune(BAD + GOOD, timer=tk.PickyTimer(), jobs=jobs, progress=False)(fn())
    assert tuned.choose(*tk.data()).name == "fast"
    c = by_name(tuned.report)
    assert c["host"].status == "host error", c["host"].reason
    assert re.match(r"IndexError: tuple index out of range \(in picky, .*tune_kernels.py:\d+\)",
                    c["host"].reason), c["host"].reason
    assert c["none"].status == "no launch" and "launched no kernel" in c["none"].reason
    assert c["kernel"].status == "compile error", c["kernel"].reason
    assert c["kernel"].reason.startswith("OperandError: ws.Float32(...): expected a number")
    assert 'tune_kernels.py", line ' in c["kernel"].reason     # it names the kernel's line
    assert [c[n].status for n in ("slow", "fast")] == ["timed", "timed"]
    assert {d.config.name for d in tuned.report.dropped()} == {"host", "none", "kernel"}


def test_a_run_where_nothing_launches_is_an_error_saying_so(cache_dir):
    tuned = ws.autotune([tk.Bare("none")], timer=tk.PickyTimer(), jobs=1,
                        progress=False)(local_picky())
    with pytest.raises(ws.AutotuneError, match=r"(?s)none of the 1 configurations ran.*"
                                               r"no launch: its call launched no kernel"):
        tuned.choose(*tk.data())


def test_a_raising_prune_fails_that_candidate_only(cache_dir):
    def prune(config, resources):
        return {"slow": None}[config.name]      # a KeyError for 'fast'  # marker: prune raises

    tuned = ws.autotune(GOOD, timer=tk.PickyTimer(), prune=prune, jobs=1,
                        progress=False)(local_picky())
    assert tuned.choose(*tk.data()).name == "slow"
    fast = by_name(tuned.report)["fast"]
    assert fast.status == "prune error" and fast.ms is None
    assert re.match(r"prune\(\) raised KeyError: 'fast' \(in prune, .*test_tune_failures.py:"
                    r"\d+\)$", fast.reason), fast.reason


def test_configurations_print_by_their_fields(cache_dir):
    tuned = ws.autotune(GOOD + [tk.Bare("none")], timer=tk.PickyTimer(), jobs=1,
                        progress=False)(local_picky())
    tuned.choose(*tk.data())
    table = tuned.report.table()
    assert "#1 Bare(name='fast', threads=64): 1.0000 ms" in table
    assert "best #1 Bare(name='fast', threads=64)" in table
    assert " at 0x" not in table, table
    record = ws.tune.all_records()[0]
    assert record["best"] == "Bare(name='fast', threads=64)"
    assert record["dropped"][0][0] == "Bare(name='none', threads=32)"


def test_config_text_reads_static_keys_slots_and_nested_policies():
    class Slotted:
        __slots__ = ("m", "n")

        def __init__(self):
            self.m, self.n = 64, tk.Bare("inner")

    class Keyed:
        def __static_key__(self):
            return (("tile", 128), ("stages", 4))

    assert ws.tune.config_text(Slotted()) == "Slotted(m=64, n=Bare(name='inner', threads=32))"
    assert ws.tune.config_text(Keyed()) == "Keyed(tile=128, stages=4)"
    assert ws.tune.config_text(tk.Tiles("x")) == "Tiles('x')"       # its own __repr__


def test_the_first_candidate_timed_runs_once_before_it_is_timed(cache_dir):
    del tk.CALLS[:]
    timer = tk.PickyTimer()
    tuned = ws.autotune(GOOD, timer=timer, jobs=1, progress=False)(local_picky())
    tuned.choose(*tk.data())
    compiled = len(GOOD)                         # the compile step calls each once
    assert tk.CALLS[:compiled] == ["slow", "fast"], tk.CALLS
    # then one untimed call of the first candidate (the process's warm-up), then the timings
    assert tk.CALLS[compiled] == "slow"
    assert timer.seen == [("slow", compiled + 1), ("fast", compiled + 2)]


def _no_config(x, y):
    pass


def _positional_config(x, y, config, /):
    pass


def _var_args(*args):
    pass


@pytest.mark.parametrize("fn, fix", [
    (_no_config, "def _no_config(x, y, *, config)"),
    (_positional_config, "def _positional_config(x, y, /, *, config)"),
    (_var_args, "def _var_args(*args, config)")])
def test_a_launch_function_without_a_config_parameter_is_refused_where_it_is_decorated(fn, fix):
    """The tuner calls ``fn(*args, config=candidate)``: a function that cannot take it is an
    ArgumentError at the decorator's line, not a host error of every candidate at the call."""
    with pytest.raises(ws.ArgumentError) as e:
        ws.autotune(GOOD, progress=False)(fn)
    text = str(e.value)
    assert text.startswith(f"ws.autotune: the launch function {fn.__qualname__}(")
    assert "takes no keyword argument 'config'" in text and f"Fix: {fix}: ..." in text
    assert e.value.where is not None and e.value.where.startswith(__file__), e.value.where
    assert all("/warpstage/" not in f.filename for f in
               __import__("traceback").extract_tb(e.value.__traceback__))


def test_launch_functions_that_take_config_are_accepted():
    for fn in (lambda x, config: None, lambda x, *, config=None: None, lambda *a, **kw: None):
        assert callable(ws.autotune(GOOD, progress=False)(fn))
