"""Misuse found by the session-6 fresh-user sweep (issue 11): the device API called on the host,
a scalar parameter indexed, a variable assigned on one path only, a bad ``arch``, a misspelt
public name, and the sweep's other cases. Each is a warpstage error naming the construct, the
user's line and the Fix, with no warpstage frame in the traceback."""
import inspect
import numpy as np
import pytest

import misuse_kit
import source_lines
import warpstage as ws

pytestmark = pytest.mark.usefixtures("sim_target")

F = ws.Tensor[ws.Float32, 1]
DEVICE_MODULES = (ws.arch, ws.copy, ws.epilogue, ws.math, ws.mma, ws.pipeline, ws.sched, ws.smem,
                  ws.tma, ws.wgmma)


def line_of(marker: str) -> int:
    return source_lines.line_of(__file__, "# " + marker)


def out(n=4, dtype=np.float32):
    return np.zeros(n, dtype)


def raised(exc, marker, call, *words) -> str:
    return misuse_kit.raised(exc, __file__, marker, call, *words)


# -- 1. the device API called on the host -------------------------------------------------------

def test_device_functions_called_on_the_host_name_what_was_called():
    S = ws.smem.make_storage("S", a=ws.smem.Array[ws.Float32, (4,), 16])
    raised(ws.CompilationError, "marker: warp_idx on host",
           lambda: ws.arch.warp_idx(),  # marker: warp_idx on host
           "ws.arch.warp_idx() was called from host code, outside any kernel",
           "Fix: call ws.arch.warp_idx() in the body of a @ws.kernel")
    raised(ws.CompilationError, "marker: fence on host",
           lambda: ws.wgmma.fence(),  # marker: fence on host
           "ws.wgmma.fence() was called from host code")
    raised(ws.CompilationError, "marker: allocate on host",
           lambda: ws.smem.allocate(S),  # marker: allocate on host
           "ws.smem.allocate() was called from host code")


def test_every_public_device_function_is_a_device_entry():
    for m in DEVICE_MODULES:
        for name in m.__all__:
            obj = getattr(m, name)
            if inspect.isfunction(obj) and obj.__module__.startswith("warpstage"):
                assert getattr(obj, "__user_entry__", False), f"{m.__name__}.{name}"
    assert ws.atomic_add.__user_entry__ and ws.printf.__user_entry__


def test_device_functions_still_work_inside_a_kernel():
    @ws.kernel
    def k(x: ws.Tensor[ws.Int32, 1]):
        x[ws.arch.thread_idx()[0]] = ws.arch.warp_idx()

    o = out(64, np.int32)
    k[1, 64](o)
    assert list(o[::32]) == [0, 1]


# -- 2. a dynamic scalar indexed -----------------------------------------------------------------

def test_item_assignment_and_indexing_of_a_scalar_parameter():
    @ws.kernel
    def k(x: F, n: ws.Int32):
        n[0] = 1  # marker: scalar setitem

    @ws.kernel
    def k2(x: F, n: ws.Int32):
        x[0] = n[0]  # marker: scalar getitem

    raised(ws.UnsupportedError, "marker: scalar setitem", lambda: k[1, 32](out(), 3),
           "item assignment to a dynamic Int32 scalar — parameter 'n'", "x[i] = v")
    raised(ws.UnsupportedError, "marker: scalar getitem", lambda: k2[1, 32](out(), 3),
           "indexing a dynamic Int32 scalar — parameter 'n'",
           "Fix: read the tensor you meant (x[0])")


# -- 3. a variable assigned on one path only ----------------------------------------------------

def test_a_variable_assigned_in_one_branch_of_a_dynamic_if():
    @ws.kernel
    def k(x: F, n: ws.Int32):
        if n > 0:  # marker: one-branch if
            y = x[1]  # marker: one-branch assignment
        x[0] = y  # marker: one-branch use

    raised(ws.UnboundVariableError, "marker: one-branch use", lambda: k[1, 32](out(), 3),
           f"`y` has no value here: it is assigned only in the then-branch (line "
           f"{line_of('marker: one-branch assignment')})",
           f"{__file__}:{line_of('marker: one-branch if')}",
           "no value when the condition is false",
           f"Fix: assign `y` before the `if` (line {line_of('marker: one-branch if')}), or in "
           "both branches.")


def test_a_variable_assigned_in_the_else_branch_only():
    @ws.kernel
    def k(x: F, n: ws.Int32):
        if n > 0:
            x[1] = 2.0
        else:
            y = x[1]
        x[0] = y  # marker: else-branch use

    raised(ws.UnboundVariableError, "marker: else-branch use", lambda: k[1, 32](out(), 3),
           "assigned only in the else-branch", "no value when the condition is true")


def test_a_variable_first_assigned_in_a_dynamic_loop():
    @ws.kernel
    def k(x: F, n: ws.Int32):
        for i in range(n):  # marker: loop-only loop
            y = x[i]
        x[0] = y  # marker: loop-only use

    raised(ws.UnboundVariableError, "marker: loop-only use", lambda: k[1, 32](out(), 3),
           "first assigned inside the dynamic `for` loop",
           f"Fix: assign `y` before the loop (line {line_of('marker: loop-only loop')})")


# -- 4. a bad arch -------------------------------------------------------------------------------

def _k():
    @ws.kernel
    def k(x: F):
        x[0] = 1.0
    return k


@pytest.mark.parametrize("arch, near", [("sm90", "sm_90a"), (90, "sm_90a"), ("hopper", "sm_90a"),
                                        ("SM_80", "sm_80"), ("compute_89", "sm_89")])
def test_compile_with_an_arch_a_user_would_try(arch, near):
    raised(ws.OperandError, "marker: compile arch",
           lambda: ws.compile(_k(), F, arch=arch),  # marker: compile arch
           "the compile option arch: expected a ptxas architecture name, one of 'sm_80'",
           f"got {type(arch).__name__} {arch!r} (did you mean {near!r}?)", f"Fix: arch={near!r}")


def test_an_unknown_arch_lists_the_accepted_ones():
    msg = raised(ws.OperandError, "marker: options arch",
                 lambda: ws.CompileOptions(arch="sm_91"))  # marker: options arch
    assert "'sm_90a'" in msg and "did you mean" not in msg


def test_compile_takes_compile_options_as_keywords():
    ck = ws.compile(_k(), F, arch="sm_80")
    assert ".target sm_80" in ck.ptx
    with pytest.raises(ws.ArgumentError, match="unexpected keyword argument 'n'"):
        ws.compile(_k(), F, n=3)                # not an option: still the kernel's arguments


# -- 5. a misspelt public name --------------------------------------------------------------------

def test_a_misspelt_public_name_says_did_you_mean():
    raised(ws.MissingNameError, "marker: warpid", lambda: ws.arch.warpid,  # marker: warpid
           "ws.arch has no attribute 'warpid' (did you mean ws.arch.warp_idx?)",
           "Fix: write ws.arch.warp_idx.")
    raised(ws.MissingNameError, "marker: lod", lambda: ws.tma.lod,  # marker: lod
           "(did you mean ws.tma.load?)")
    raised(ws.MissingNameError, "marker: other module",
           lambda: ws.tma.fence,  # marker: other module
           "did you mean ws.wgmma.fence?")
    raised(ws.MissingNameError, "marker: top level", lambda: ws.Flaot32,  # marker: top level
           "did you mean ws.Float32")


def test_a_missing_name_is_still_an_attribute_error():
    assert not hasattr(ws.arch, "nope") and getattr(ws.layout, "nope", 7) == 7
    with pytest.raises(AttributeError):
        ws.ops.nope


# -- 6. the sweep's other cases -------------------------------------------------------------------

def test_mbarrier_used_before_init():
    S = ws.smem.make_storage("Bar", b=ws.smem.MbarrierArray[1])

    @ws.kernel
    def k(x: F):
        s = ws.smem.allocate(S)
        s.b[0].arrive()  # marker: arrive before init
        x[0] = 1.0

    raised(ws.SimulatorError, "marker: arrive before init", lambda: k[1, 32](out()),
           "no mbarrier.init ran there", "ws.arch.fence_mbarrier_init()")


def test_recursion_with_a_dynamic_base_case():
    @ws.jit
    def depth(n):
        if n <= 0:
            return 0
        return depth(n - 1) + 1  # marker: dynamic recursion

    @ws.kernel
    def k(x: ws.Tensor[ws.Int32, 1], n: ws.Int32):
        x[0] = depth(n)

    raised(ws.CompilationError, "marker: dynamic recursion", lambda: k[1, 32](out(4, np.int32), 3),
           "calls itself with the same static arguments", "write the recursion as a loop")


def test_a_bitwise_operator_on_floats():
    @ws.kernel
    def k(x: F):
        x[0] = x[1] ^ 1  # marker: float xor

    raised(ws.UnsupportedError, "marker: float xor", lambda: k[1, 32](out()),
           "the bitwise operator ^ on float values (f32)", "ws.Int32(x) ^ 1")


def test_star_args_kernel_parameters():
    with pytest.raises(ws.CompilationError, match=r"(?s)\*rest \(\*args\) is not supported.*"
                                                  r"Fix: name each parameter"):
        @ws.kernel
        def k(x: F, *rest):
            x[0] = 1.0


def test_while_true_with_no_break_is_an_error_before_tracing():
    @ws.kernel
    def k(x: F):
        while True:  # marker: endless while
            x[0] = 1.0

    raised(ws.UnsupportedError, "marker: endless while", lambda: k[1, 32](out()),
           "`while True:` with no `break` or `return` in its body never ends")


def test_while_true_with_a_dynamic_break_is_a_gpu_loop():
    @ws.kernel
    def k(x: F, n: ws.Int32):
        i = 0
        while True:
            i += 1
            if i >= n:
                break
        x[0] = ws.Float32(i)

    o = out()
    k[1, 32](o, 5)
    assert o[0] == 5


def test_compile_with_too_few_types_gives_a_compile_fix():
    raised(ws.ArgumentError, "marker: compile no types",
           lambda: ws.compile(_k()),  # marker: compile no types
           "no value for 'x'", "Fix: ws.compile(k, x), a value or a type per parameter")


def test_a_static_smem_index_past_the_end():
    S = ws.smem.make_storage("Sm", a=ws.smem.Array[ws.Float32, (4,), 16])

    @ws.kernel
    def k(x: F):
        s = ws.smem.allocate(S)
        s.a[7] = 1.0  # marker: smem past the end
        x[0] = s.a[0]

    raised(ws.OperandError, "marker: smem past the end", lambda: k[1, 32](out()),
           "expected an index in [0, 4), got 7", "Fix: keep index 0 in [0, 4)")
