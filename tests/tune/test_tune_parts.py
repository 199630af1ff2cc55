"""The autotuner's parts on their own: the launch-limit checks, what travels to a worker
(configurations that do not pickle, CUDA tensors as stand-ins), the local search's features,
the default key, and the options' errors."""
import os
import pickle

import ml_dtypes
import numpy as np
import pytest

import warpstage as ws
from warpstage.core.static_key import static_key
from warpstage.tune import portable
from warpstage.tune.resources import KernelResources, Resources, launch_problems


def launch(threads=128, regs=32, static=0, dynamic=0):
    return KernelResources("k", threads, (1, 1, 1), regs, static, dynamic, 0, 0)


def test_launch_limits_name_the_kernel_and_the_numbers():
    assert launch_problems(Resources((launch(),))) == []
    smem = launch_problems(Resources((launch(static=1024, dynamic=232448),)))
    assert smem == ["k: 233472 bytes of shared memory per CTA (1024 static + 232448 dynamic), "
                    "more than the 232448 a CTA may use"]
    regs = launch_problems(Resources((launch(threads=1024, regs=72),)))
    assert regs == ["k: 72 registers x 1024 threads = 73728, more than an SM's 65536"]
    assert "2048 threads" in launch_problems(Resources((launch(threads=2048, regs=8),)))[0]
    assert launch_problems(Resources((launch(dynamic=110_000),)), max_smem=99 * 1024) != []


def test_resources_report_the_worst_launch():
    r = Resources((launch(regs=40, dynamic=10), launch(regs=90, static=5)))
    assert (r.smem_bytes, r.registers, r.spills) == (10, 90, 0)
    assert Resources(()).registers is None and str(Resources(())) == "no launches"


def test_a_policy_that_does_not_pickle_travels_as_its_constructor_arguments():
    fa = ws.ops.FlashAttentionWgmma(head_dim=128, tile_n=64, num_stages=3)
    with pytest.raises(Exception):
        pickle.dumps(fa)                            # it holds a storage class made at run time
    blob = portable.pack_config(fa)
    assert blob is not None
    again = portable.unpack(blob)
    assert static_key(again) == static_key(fa) and again is not fa


def test_a_configuration_that_cannot_be_rebuilt_does_not_travel():
    class Odd:
        def __init__(self, size):
            self.width = size                       # no attribute named like the parameter
            self.f = lambda: None                   # and no pickling
    assert portable.pack_config(Odd(3)) is None


def test_what_names_a_class_of_main_or_a_local_one_does_not_travel(monkeypatch):
    """It pickles here, but a worker (its __main__ is worker_main) could not unpickle it."""
    import sys
    main_policy = type("MainPolicy", (), {"__init__": lambda self, t=64: setattr(self, "t", t)})
    main_policy.__module__ = "__main__"
    monkeypatch.setattr(sys.modules["__main__"], "MainPolicy", main_policy, raising=False)
    pickle.dumps(main_policy())                     # plain pickle accepts it
    assert portable.pack_config(main_policy()) is None

    class Local:
        def __init__(self, t=64):
            self.t = t
    assert portable.pack_config(Local()) is None
    assert portable.pack_args((np.zeros(2), Local()), {}, data=True) is None
    assert portable.pack_args((np.zeros(2),), {"c": main_policy}, data=False) is None


def test_functions_travel_by_name_unless_local():
    import tune_kernels as tk
    assert portable.function_ref(tk.scale) == ("tune_kernels", "scale")
    assert portable.function_ref(tk.scale_kernel) == ("tune_kernels", "scale_kernel")
    assert portable.function_ref(lambda: None) is None


def test_arguments_travel_with_their_data_or_as_stand_ins():
    x = np.arange(4, dtype=np.float32)
    args, kwargs = portable.unpack(portable.pack_args((x, 3), {"n": None}, data=True))
    np.testing.assert_array_equal(args[0], x) and kwargs == {"n": None}
    assert portable.pack_args((lambda: 0,), {}, data=False) is None


def test_features_read_dataclasses_static_keys_and_attributes():
    from warpstage.ops.tune_spaces import MatmulTuning
    assert ws.tune.features(MatmulTuning(128, 4, 8))["tile_n"] == "128"
    fa = ws.ops.FlashAttentionWgmma(head_dim=64)
    assert ws.tune.features(fa)["num_stages"] == "2"
    import tune_kernels as tk
    assert ws.tune.features(tk.Grid(1, 2)) == {"a": "1", "b": "2", "threads": "32"}


def test_the_default_key_holds_tensor_layouts_and_scalar_types():
    x = np.zeros((4, 6), ml_dtypes.bfloat16)
    k = ws.tune.default_key((x, x.T, 3, 2.0, None, "mode"), {"flag": True})
    assert k == (("tensor", "bf16", (4, 6), (6, 1)), ("tensor", "bf16", (6, 4), (1, 6)),
                 "int", "float", None, "mode", ("flag", "bool"))


@pytest.mark.parametrize("kwargs, text", [
    (dict(strategy="random"), "strategy='random'; expected one of"),
    (dict(isolation="thread"), "isolation='thread'"),
    (dict(budget_s=0), "budget_s=0; expected seconds > 0"),
    (dict(rep=0), "rep=0; expected an int >= 1"),
    (dict(timer=object()), "has no measure(run, config, warmup, rep) method"),
    (dict(key="shape"), "key='shape' is a str"),
    (dict(prune=3), "prune=3 is a int"),
])
def test_bad_options_are_argument_errors_with_a_fix(kwargs, text):
    with pytest.raises(ws.ArgumentError, match="Fix:") as ei:
        ws.autotune([1, 2], **kwargs)
    assert text in str(ei.value)


def test_an_empty_space_and_a_misused_launch_are_errors():
    import tune_kernels as tk
    with pytest.raises(ws.ArgumentError, match="space is empty"):
        ws.autotune([], progress=False)(tk.scale)(*tk.data())
    with pytest.raises(ws.ArgumentError, match=r"tuned\[grid, block\]"):
        ws.autotune([1], progress=False)(tk.scale_kernel)(*tk.data())
    with pytest.raises(ws.ArgumentError, match="config_param='cfgx' is not a parameter"):
        ws.autotune([1], config_param="cfgx")(tk.scale_kernel)


@pytest.mark.parametrize("configs, key, text", [
    (7, None, "configs is a int"),
    ([object()], None, "configuration #0"),
    ([1], lambda x, y: {"a": [1]}, "expected plain data"),
    ([1], lambda x, y: object(), "expected plain data"),     # would re-tune on every call
])
def test_a_bad_space_or_key_is_an_argument_error_before_tuning(configs, key, text, cache_dir):
    import tune_kernels as tk
    with pytest.raises(ws.ArgumentError, match="Fix:") as ei:
        ws.autotune(configs, key=key, progress=False)(tk.scale)(*tk.data())
    assert text in str(ei.value)
    assert ws.tune.COUNTS["compiles"] == 0
    frames = [f.filename for f in __import__("traceback").extract_tb(ei.value.__traceback__)]
    package = __import__("os").path.dirname(ws.__file__)
    assert not any(f.startswith(package) for f in frames), frames     # the user's frames only


def test_a_decorated_function_travels_through_its_tuned_object(cache_dir):
    import tune_kernels as tk
    assert portable.function_ref(tk.decorated.target) == ("tune_kernels", "decorated")
    assert portable.resolve(("tune_kernels", "decorated")) is tk.decorated.target
    x, y = tk.data()
    tk.decorated(x, y)
    assert tk.decorated.report.best.config.name == "fast" and (y == 2 * x).all()


def test_candidates_of_a_worker_that_never_gets_ready_run_in_this_process(cache_dir,
                                                                          monkeypatch):
    import subprocess
    import sys
    import tune_kernels as tk
    from warpstage.tune import workers

    def broken(job, extra_env=None):
        proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(7)"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        proc.stdin.close()
        os.set_blocking(proc.stdout.fileno(), False)
        return proc
    monkeypatch.setattr(workers, "_spawn", broken)
    configs = [tk.Tiles("slow", 32), tk.Tiles("fast", 64)]
    tuned = ws.autotune(configs, timer=tk.FakeTimer(), jobs=2, isolation="process",
                        progress=False)(tk.scale)
    x, y = tk.data()
    tuned(x, y)
    assert tuned.report.best.config.name == "fast" and (y == 2 * x).all()
    assert ws.tune.COUNTS["compiles"] == 2 and ws.tune.COUNTS["timings"] == 2


def test_a_tensor_timed_in_a_worker_keeps_its_view():
    torch = pytest.importorskip("torch")
    base = torch.arange(48, dtype=torch.float32).reshape(6, 8)
    view = base[1:, 2:7].t()                        # offset, gaps and a transpose
    again = portable._TorchData(view).rebuild("cpu")
    assert torch.equal(again, view)
    assert (again.stride(), again.storage_offset()) == (view.stride(), view.storage_offset())
