"""ws.autotune end to end in the simulator with a fake timer: the winner is the fastest fake
time; bad candidates (too much shared memory, a deadlock, an invalid register split, a hang)
are dropped with their reasons while the run finishes; a second process takes the winner from
disk and compiles and times nothing."""
import os
import subprocess
import sys

import numpy as np
import pytest

import warpstage as ws
import tune_kernels as tk

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

GOOD = [tk.Tiles("slow", 32), tk.Tiles("fast", 64), tk.Tiles("medium", 128)]
BAD = [tk.Tiles("huge", 64, smem=300_000), tk.Tiles("stuck", 64, deadlock=True),
       tk.Tiles("split", 384, regs=(40, 256))]


def by_name(report):
    return {c.config.name: c for c in report.candidates}


def test_the_winner_is_the_fastest_and_bad_candidates_are_dropped_with_reasons(cache_dir):
    tuned = ws.autotune(GOOD + BAD, timer=tk.FakeTimer(), jobs=2, progress=False)(tk.scale)
    x, y = tk.data()
    tuned(x, y)
    r = tuned.report
    assert r.best.config.name == "fast" and r.best.ms == tk.FAKE_MS["fast"]
    np.testing.assert_array_equal(y, 2 * x)        # the winner ran on the caller's arguments
    c = by_name(r)
    assert c["huge"].status == "compile error" and "232448 bytes" in c["huge"].reason
    assert c["stuck"].status == "failed" and "DeadlockError" in c["stuck"].reason
    assert c["split"].status == "failed" and "70656 registers" in c["split"].reason
    assert [c[n].status for n in ("slow", "fast", "medium")] == ["timed"] * 3
    assert ws.tune.COUNTS["compiles"] == 6 and ws.tune.COUNTS["timings"] == 5


def test_candidates_run_on_copies_so_the_callers_arguments_change_only_by_the_winner(cache_dir):
    seen = []

    class Spy(tk.FakeTimer):
        def measure(self, run, config, warmup, rep):
            seen.append(config.name)
            return super().measure(run, config, warmup, rep)
    x, y = tk.data(10)
    y[:] = -1
    tuned = ws.autotune(GOOD, timer=Spy(), jobs=1, progress=False, name="spy")(tk.scale)
    assert tuned.choose(x, y).name == "fast"
    assert sorted(seen) == ["fast", "medium", "slow"]
    assert (y == -1).all()                          # tuning alone wrote nothing of the caller's


def test_prune_gets_the_compilers_report_and_drops_without_launching(cache_dir):
    asked = {}

    def prune(config, res):
        asked[config.name] = (res.smem_bytes, res.registers, res.launches[0].threads)
        return "over 1000 bytes of shared memory" if res.smem_bytes > 1000 else None
    configs = GOOD + [tk.Tiles("huge", 64, smem=4096)]
    tuned = ws.autotune(configs, timer=tk.FakeTimer(), prune=prune, jobs=1,
                        progress=False)(tk.scale)
    tuned.choose(*tk.data())
    c = by_name(tuned.report)
    assert c["huge"].status == "pruned" and c["huge"].reason == "over 1000 bytes of shared memory"
    assert asked["huge"][0] >= 4096 and asked["medium"][2] == 128
    assert asked["fast"][1] is None or asked["fast"][1] > 0     # None only without ptxas
    assert c["huge"].ms is None and ws.tune.COUNTS["timings"] == 3


def test_a_second_process_takes_the_winner_from_disk_without_compiling_or_timing(cache_dir):
    tuned = ws.autotune(GOOD + BAD, timer=tk.FakeTimer(), jobs=2, progress=False)(tk.scale)
    assert tuned.choose(*tk.data()).name == "fast"
    code = ("import warpstage as ws, tune_kernels as tk\n"
            "from warpstage.jit.compiled import STAGE_COUNTS\n"
            "ws.set_target('sim')\n"
            "t = ws.autotune(GOOD + BAD, timer=tk.FakeTimer(), jobs=2, progress=False)(tk.scale)\n"
            "best = t.choose(*tk.data())\n"
            "print(best.name, t.report.from_disk, ws.tune.COUNTS['compiles'], "
            "ws.tune.COUNTS['timings'], ws.tune.COUNTS['record_hits'], STAGE_COUNTS['trace'])\n")
    setup = ("import tune_kernels as tk\n"
             "GOOD = [tk.Tiles('slow', 32), tk.Tiles('fast', 64), tk.Tiles('medium', 128)]\n"
             "BAD = [tk.Tiles('huge', 64, smem=300_000), tk.Tiles('stuck', 64, deadlock=True), "
             "tk.Tiles('split', 384, regs=(40, 256))]\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, HERE]))
    out = subprocess.run([sys.executable, "-c", setup + code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["fast", "True", "0", "0", "1", "0"]


def test_a_changed_space_is_tuned_again(cache_dir):
    first = ws.autotune(GOOD, timer=tk.FakeTimer(), jobs=1, progress=False)(tk.scale)
    first.choose(*tk.data())
    more = ws.autotune(GOOD + [tk.Tiles("huge", 32)], timer=tk.FakeTimer(), jobs=1,
                       progress=False)(tk.scale)
    assert more.choose(*tk.data()).name == "huge"
    assert ws.tune.COUNTS["tunings"] == 2 and ws.tune.COUNTS["record_hits"] == 0


def test_the_watchdog_kills_a_hanging_candidate_and_the_run_goes_on(cache_dir):
    configs = [tk.Tiles("slow", 32), tk.Tiles("sleepy", 64, spin=True), tk.Tiles("fast", 64)]
    tuned = ws.autotune(configs, timer=tk.FakeTimer(), jobs=1, isolation="process",
                        watchdog_s=3.0, progress=False)(tk.scale)
    x, y = tk.data()
    tuned(x, y)
    c = by_name(tuned.report)
    assert c["sleepy"].status == "hung" and "watchdog" in c["sleepy"].reason
    assert c["fast"].status == "timed" and tuned.report.best.config.name == "fast"
    np.testing.assert_array_equal(y, 2 * x)


def test_a_kernel_is_tuned_with_the_config_as_its_static_argument(cache_dir):
    tuned = ws.autotune(GOOD + BAD[1:2], timer=tk.FakeTimer(), jobs=1,
                        progress=False)(tk.scale_kernel)
    x, y = tk.data()
    tuned[tk.grid_for, tk.block_for](x, y, x.shape[0])
    np.testing.assert_array_equal(y, 2 * x)
    assert tuned.report.best.config.name == "fast"
    assert by_name(tuned.report)["stuck"].status == "failed"


def test_local_search_walks_to_the_best_and_skips_the_rest(cache_dir):
    space = [tk.Grid(a, b) for a in range(6) for b in range(5)]
    tuned = ws.autotune(space, timer=tk.GridTimer(), strategy="local", jobs=1,
                        progress=False)(tk.grid_scale)
    best = tuned.choose(*tk.data(8))
    assert (best.a, best.b) == (3, 2)
    assert 0 < tuned.report.count("timed") < len(space)
    assert tuned.report.count("skipped") == len(space) - tuned.report.count("timed")


def test_the_budget_stops_the_run_and_the_fastest_so_far_wins(cache_dir):
    class Slow(tk.GridTimer):
        def measure(self, run, config, warmup, rep):
            import time
            time.sleep(0.3)
            return super().measure(run, config, warmup, rep)
    space = [tk.Grid(a, 0) for a in range(20)]
    tuned = ws.autotune(space, timer=Slow(), budget_s=1.5, jobs=1, progress=False)(tk.grid_scale)
    tuned.choose(*tk.data(8))
    r = tuned.report
    assert r.count("skipped") > 0 and r.best is not None
    assert all("budget" in c.reason for c in r.candidates if c.status == "skipped")


def test_no_candidate_running_is_an_error_naming_each_reason(cache_dir):
    tuned = ws.autotune(BAD[1:], timer=tk.FakeTimer(), jobs=1, progress=False)(tk.scale)
    with pytest.raises(ws.AutotuneError) as ei:
        tuned(*tk.data())
    text = str(ei.value)
    assert "none of the 2 configurations ran" in text and "DeadlockError" in text
    assert "70656" in text and "Fix:" in text


def test_the_summary_line_on_stderr_and_silence(cache_dir, capsys):
    ws.autotune(GOOD, timer=tk.FakeTimer(), jobs=1, progress=True, name="loud")(tk.scale)(
        *tk.data())
    err = capsys.readouterr().err
    assert "[warpstage] tune loud: 3 of 3 candidates timed" in err and "best #1" in err
    ws.autotune(GOOD, timer=tk.FakeTimer(), jobs=1, progress=False, name="quiet")(tk.scale)(
        *tk.data())
    assert capsys.readouterr().err == ""


def test_the_tune_command_shows_and_clears_the_winners(cache_dir):
    ws.autotune(GOOD, timer=tk.FakeTimer(), jobs=1, progress=False, name="shown")(tk.scale)(
        *tk.data())
    env = dict(os.environ, PYTHONPATH=ROOT)
    show = subprocess.run([sys.executable, "-m", "warpstage", "tune", "show"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert show.returncode == 0, show.stderr
    assert "1 tuning record" in show.stdout and "shown on sim" in show.stdout
    assert "best Tiles('fast'): 1.0000 ms; 3 of 3 timed" in show.stdout
    clear = subprocess.run([sys.executable, "-m", "warpstage", "tune", "clear"], env=env,
                           capture_output=True, text=True, timeout=120)
    assert "removed 1 tuning record" in clear.stdout
    assert ws.tune.all_records() == []
