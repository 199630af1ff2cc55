"""``ws.ops.matmul``: C = A @ B with the warp-specialized persistent TMA + wgmma GEMM
(``matmul_kernel.py``), called like ``torch.matmul`` for 2-D and 3-D operands.

Host side only: argument checks, the operand views TMA reads (``matmul_operands.py``: the
transposes are strides, not copies), descriptor reuse, the policy choice per shape
(``matmul_config.py``) and the launch. Tensors may be torch
tensors (CUDA tensors run on the GPU; CPU tensors, or any tensor when the target is 'sim', in the
CPU simulator) or numpy arrays (simulator; bf16 as ``ml_dtypes.bfloat16``).
"""
from __future__ import annotations

import sys

import numpy as np

from ..errors import ArgumentError, WarpstageError
from ..lang.scalars import BFloat16, Float16, Float32, Int32
from ..lang.sched import grid_size
from ..runtime.tensors import as_tensor_arg
from ..jit.tracebacks import _user_error
from .descriptors import descriptor, sm_count
from .host_fixes import (cast_code, check_no_grad, check_tune, empty_code, framework,
                         is_read_only, kind_of)
from .matmul_config import (check_arguments, choose_config, choose_stream_k, make_policy,
                            policy_for)
from .matmul_plan import stream_k_tiles
from .matmul_operands import (MatmulCopyWarning, _framework, _new, _operand, _swap,
                              check_no_overlap, check_same_device, check_target,
                              tma_compatible)
from .matmul_kernel import FP8_DTYPES, Matmul, matmul_kernel, tile_k_of
from .matmul_epilogues import epilogue_key, operand_names, operands_of
from .matmul_splitk import REDUCE_THREADS, splitk_reduce
from . import op_plans
from .torch_dispatch import torch_op

__all__ = ["matmul", "policy_for", "choose_config", "tma_compatible",
           "MatmulCopyWarning", "SIM_CTAS"]

SIM_CTAS = 2
"""Persistent CTAs in the simulator (several tiles per CTA, so the tile loop is exercised)."""
_IN = {"f16": Float16, "bf16": BFloat16}
_DTYPE_NAMES = {Float16: "float16", BFloat16: "bfloat16", Float32: "float32"}
_OUT_NAMES = {"float16": Float16, "half": Float16, "f16": Float16, "bfloat16": BFloat16,
              "bf16": BFloat16, "float32": Float32, "float": Float32, "f32": Float32}
def _arg(name: str, x):
    ta = as_tensor_arg(x, name)
    if ta is None:
        raise ArgumentError(f"ws.ops.matmul: {name} is {kind_of(x)}; expected a tensor "
                            "(torch, numpy) of shape (M, K) / (K, N) or batched (B, M, K) / "
                            "(B, K, N). Fix: pass torch tensors or numpy arrays (as to "
                            "torch.matmul / np.matmul)")
    if ta.ndim not in (2, 3):
        raise ArgumentError(f"ws.ops.matmul: {name} has shape {tuple(ta.shape)}; expected 2 "
                            "dimensions, or 3 (batched). Fix: reshape it (a vector: x[None, :] "
                            "or x[:, None])")
    return ta


def _out_dtype(out_dtype, default, like=(), op: str = "matmul"):
    """A ws dtype from None (``default``), a ws dtype class, a torch or numpy dtype, or a name;
    ArgumentError from ``ws.ops.<op>`` for any other."""
    if out_dtype is None:
        return default
    if out_dtype in (Float16, BFloat16, Float32):
        return out_dtype
    name = str(out_dtype).replace("torch.", "").replace("numpy.", "")
    try:
        name = np.dtype(out_dtype).name if not isinstance(out_dtype, str) else name
    except TypeError:
        pass
    got = _OUT_NAMES.get(name)
    if got is None:
        fw = framework(*like)
        raise ArgumentError(f"ws.ops.{op}: out_dtype={out_dtype!r}; expected float16, "
                            "bfloat16 or float32 (a torch, numpy or ws dtype). Fix: out_dtype="
                            + ("torch.float32" if fw == "torch" else "np.float32")
                            + f" (or leave it out: {_DTYPE_NAMES[default]}"
                            + (", the inputs' dtype)" if op == "matmul" else ")"))
    return got


def _sms(ta) -> int:
    return sm_count(ta, SIM_CTAS)


def _foldable(ta) -> bool:
    """Whether the 3-D tensor's first two dimensions merge into one (a view, no copy)."""
    return ta.shape[0] == 1 or ta.shape[1] == 1 or ta.strides[0] == ta.shape[1] * ta.strides[1]


def _shapes(ta, tb, op: str = "matmul"):
    """(batches, M, N, K, a_batched, b_batched); ArgumentError (from ``ws.ops.<op>``) when they
    do not chain."""
    m, k = ta.shape[-2:]
    k2, n = tb.shape[-2:]
    ba = ta.shape[0] if ta.ndim == 3 else None
    bb = tb.shape[0] if tb.ndim == 3 else None
    if k != k2 or (ba is not None and bb is not None and ba != bb):
        raise ArgumentError(f"ws.ops.{op}: shapes {tuple(ta.shape)} and {tuple(tb.shape)} do "
                            "not chain; expected (M, K) @ (K, N), with batched operands "
                            "(B, M, K) @ (B, K, N) (or one of them 2-D). Fix: transpose or "
                            "reshape the operands" + (" (b as w.T / w.mT of an (N, K) or "
                                                      "(B, N, K) weight)" if op != "matmul"
                                                      else ""))
    batches = ba if ba is not None else 1 if bb is None else bb     # 0 batches: an empty result
    return batches, m, n, k, ba is not None, bb is not None


def matmul(a, b, *, out=None, out_dtype=None, epilogue=None, bias=None, tile_n=None,
           num_stages=None, raster="M", group=None, schedule="cooperative", splits=None,
           tile_m=None, cluster=(1, 1), tune=False, stream_k=None):
    """``epilogue(a @ b)``, like ``torch.matmul`` for 2-D and 3-D operands.

    ``a``: (M, K) or (B, M, K); ``b``: (K, N) or (B, K, N); fp16 or bf16, one dtype and device;
    any strides (all four transposes are read through strides; a layout TMA cannot address is
    copied, with a MatmulCopyWarning). A 2-D operand with a 3-D one is broadcast over the batch.
    f32 accumulation on the tensor cores; the result is rounded once to ``out_dtype`` (None: the
    inputs' dtype; or float16 / bfloat16 / float32 as a torch, numpy or ws dtype). ``out``: an
    (M, N) / (B, M, N) tensor of that dtype to write (else a new contiguous one is returned).
    ``epilogue``: None or a ``ws.ops.Epilogue`` (``BiasGelu(bias)``, ``BiasSilu(bias)``, ...)
    applied per f32 element before the rounding. ``bias``: an (N,) tensor added per column,
    shorthand for ``epilogue=ws.ops.Bias(bias)`` (as ``torch.nn.functional.linear``'s; with
    another epilogue pass it to that one, ``BiasGelu(bias)``). ``tile_n`` (64/128/192/256), ``num_stages``,
    ``raster`` ('M'/'N'), ``group`` and ``schedule`` ('cooperative'/'pingpong'): the kernel's
    policy (``ws.ops.Matmul``; None: chosen per shape). ``splits``: K ranges computed by
    separate work units into an f32 workspace and added by a second kernel (split-K,
    ``matmul_splitk.py``; cooperative schedule only; None: chosen per shape, 1: none).
    ``tile_m``: rows per tile, 128 or 64 (one consumer warpgroup; cooperative only). None
    (each of tile_n, splits, tile_m): the least estimated device time for the shape
    (``matmul_plan.plan``: at M = 128-256 against a 4096-wide weight, 64 x 128 tiles unsplit).
    ``cluster``: (1, 1) (default), (2, 1) or (1, 2): thread-block clusters of two CTAs on M- /
    N-adjacent tiles sharing B / A by TMA multicast (``matmul_producer.py``; not the default:
    docs/matmul.md has the measurements).
    ``stream_k``: None (chosen per shape: ``matmul_config.choose_stream_k``), True or False:
    the tiles of the last partial wave split by K steps evenly over the SMs, their partial sums
    added by the CTA that completes each (``matmul_consumer.py``, "The stream-K fix-up";
    cooperative schedule, unsplit, no cluster). Its f32 workspace (``2 x SMs`` tiles) and
    counters are allocated once per device and tile size and reused: two streams must not run
    stream-K GEMMs of one tile size at the same time.

    ``tune``: False (default) uses the shipped, measured policy per shape; True chooses it per
    shape class with ``ws.autotune`` over ``tune_spaces.matmul_space`` (26 configurations, up
    to 16 more at small M: K splits and tile rows; the first call of a class compiles and
    times them, the winner is kept on disk for later calls and processes; docs/autotune.md). It cannot be combined with the policy arguments.

    Returns ``out`` or a new tensor (torch in, torch out; numpy in, numpy out). Raises
    ArgumentError for shapes that do not chain, unsupported dtypes, mixed devices or a
    mismatched ``out``, ``bias`` with an ``epilogue``, or a torch tensor that requires grad
    while grad mode is on (no backward is registered); ValueError (from the policy) for a
    tile_n / num_stages out of range. A repeated call with the default policy goes straight to
    its kept plan (``op_plans.py``: the facts read, the guards checked, the launch).

    With torch tensors and neither ``out`` nor ``epilogue`` (nor a non-torch ``out_dtype``), the
    call goes through the PyTorch custom op ``torch.ops.warpstage.matmul``
    (warpstage/runtime/torch_library.py: a fake implementation for torch.compile; no autograd
    formula, there is no backward), so
    ``torch.compile(fullgraph=True)`` traces it without a graph break."""
    if bias is not None:
        epilogue = _with_bias(bias, epilogue)
    check_no_grad("matmul", "a b out", a, b, out)
    if epilogue is not None:
        check_epilogue_grad("matmul", epilogue)
    if (tune is False and epilogue is None and tile_n is None and num_stages is None
            and group is None and splits is None and tile_m is None and stream_k is None
            and raster == "M" and schedule == "cooperative" and cluster == (1, 1)):
        # the default policy (the common call): its plan, or the op's code recorded as one
        op = None if out is not None else torch_op("matmul", (a, b), out_dtype is None or (
            "torch" in sys.modules and isinstance(out_dtype, sys.modules["torch"].dtype)))
        if op is not None:
            return op(a, b, out_dtype, None, None, "M", None, "cooperative", None, None)
        return matmul_eager(a, b, out=out, out_dtype=out_dtype)
    cluster = tuple(cluster) if isinstance(cluster, (tuple, list)) else cluster
    if tune is not False:
        return _tuned(a, b, out, out_dtype, epilogue, tune, dict(
            tile_n=tile_n, num_stages=num_stages, group=group, splits=splits, tile_m=tile_m,
            raster=raster != "M", schedule=schedule != "cooperative", cluster=cluster != (1, 1),
            stream_k=stream_k))
    op = _torch_matmul(a, b, out, out_dtype, epilogue, tile_n, num_stages, raster, group,
                       schedule, splits, tile_m) if cluster == (1, 1) and stream_k is None \
        else None
    if op is not None:
        return op(a, b, out_dtype, tile_n, num_stages, raster, group, schedule, splits, tile_m)
    return matmul_eager(a, b, out=out, out_dtype=out_dtype, epilogue=epilogue, tile_n=tile_n,
                        num_stages=num_stages, raster=raster, group=group, schedule=schedule,
                        splits=splits, tile_m=tile_m, cluster=cluster, stream_k=stream_k)


_DEFAULT = "the default policy"
"""A plan key's mark for :func:`matmul`'s calls with every policy argument at its default."""


def _with_bias(bias, epilogue):
    """``matmul(..., bias=)``: the ``Bias`` epilogue; ArgumentError beside another epilogue."""
    if epilogue is not None:
        raise _user_error(ArgumentError(
            f"ws.ops.matmul: bias= with epilogue={type(epilogue).__name__}(...); expected one "
            "of them (the epilogue adds what it adds). Fix: pass the bias to the epilogue "
            "(epilogue=ws.ops.BiasGelu(bias)), or drop epilogue="))
    from .matmul_epilogues import Bias
    return Bias(bias)


def check_epilogue_grad(op: str, epilogue) -> None:
    """``check_no_grad`` of an epilogue's tensors (the bias of ``bias=`` among them), each
    named by its field (``bias``, ``Residual.residual``) where it is one."""
    operands = getattr(epilogue, "operands", None)
    if operands is None:
        return
    try:
        ts = tuple(operands())
    except Exception:               # noqa: BLE001 - the op's own checks report a broken one
        return
    if not any(getattr(t, "requires_grad", False) is True for t in ts):
        return
    check_no_grad(op, operand_names(epilogue, ts), *ts)


def _tuned(a, b, out, out_dtype, epilogue, tune, given):
    """``matmul(..., tune=True)``: the autotuned policy (warpstage/ops/tune_spaces.py)."""
    check_tune("matmul", tune, given)
    try:                                # the operands, before tuning (not as its failure)
        _shapes(*_operands(a, b)[:2])
    except WarpstageError as e:
        raise _user_error(e) from None
    from .tune_spaces import tuner
    return tuner("matmul")(a, b, out, out_dtype, epilogue)


def _torch_matmul(a, b, out, out_dtype, epilogue, tile_n, num_stages, raster, group, schedule,
                  splits, tile_m=None):
    torch = sys.modules.get("torch")
    ok = out is None and epilogue is None and torch is not None and (
        out_dtype is None or isinstance(out_dtype, torch.dtype)) and \
        all(n is None or type(n) is int for n in (tile_n, num_stages, group, splits, tile_m)) \
        and type(raster) is str and type(schedule) is str
    return torch_op("matmul", (a, b), ok)


def matmul_eager(a, b, *, out=None, out_dtype=None, epilogue=None, tile_n=None, num_stages=None,
                 raster="M", group=None, schedule="cooperative", splits=None, tile_m=None,
                 cluster=(1, 1), stream_k=None):
    """:func:`matmul` without the torch op (what the op runs). A repeated call with the same
    facts (shapes, strides, dtypes, devices, alignment, arguments) launches its kept plan
    (``op_plans.py``); a call with a cluster is not kept (its launch is not a plain one). With
    every policy argument at its default it goes straight to the plans."""
    if (epilogue is None and tile_n is None and num_stages is None and group is None
            and splits is None and tile_m is None and stream_k is None and raster == "M"
            and schedule == "cooperative" and cluster == (1, 1)):
        try:
            return op_plans.run("matmul", (a, b, out), (_DEFAULT, out_dtype, type(out_dtype)),
                                lambda: _matmul(a, b, out, out_dtype, None, None, None, "M",
                                                None, "cooperative", None))
        except (WarpstageError, ValueError) as e:
            _user_error(e)
            raise
    try:
        cluster = tuple(cluster) if isinstance(cluster, (tuple, list)) else cluster
        tensors = _plan_tensors(a, b, out, epilogue) if cluster == (1, 1) else None
        if tensors is None:
            return _matmul(a, b, out, out_dtype, epilogue, tile_n, num_stages, raster, group,
                           schedule, splits, tile_m=tile_m, cluster=cluster,
                           stream_k=stream_k)
        return op_plans.run("matmul", tensors, _typed(
            out_dtype, tile_n, num_stages, raster, group, schedule, splits, tile_m,
            None if epilogue is None else type(epilogue),
            None if epilogue is None else epilogue_key(epilogue), stream_k),
            lambda: _matmul(a, b, out, out_dtype, epilogue, tile_n, num_stages, raster,
                            group, schedule, splits, tile_m=tile_m, stream_k=stream_k))
    except (WarpstageError, ValueError) as e:
        _user_error(e)
        raise


def _typed(*values) -> tuple:
    """A call's non-tensor arguments with their types, part of its plan key (so ``True`` and
    ``1``, equal in Python, stay apart)."""
    return values, tuple(map(type, values))


def _plan_tensors(a, b, out, epilogue):
    """The tensors a plan of this call is keyed by (a, b, out, the epilogue's operands), or None
    when the epilogue keeps the call off the plans: not an ``Epilogue``, an operand that is not a
    tensor, or a ``__static_key__`` of its own (the host checks may read what it leaves out)."""
    if epilogue is None:
        return (a, b, out)
    from .matmul_epilogues import Epilogue, _is_tensor
    cls = type(epilogue)
    if not isinstance(epilogue, Epilogue) or not (
            cls.__static_key__ is Epilogue.__static_key__
            or cls.__module__.startswith("warpstage.")):
        return None
    operands = operands_of(epilogue)
    if not all(_is_tensor(x) for x in operands):
        return None
    return (a, b, out) + operands


def _operands(a, b, dtypes=None, op="matmul"):
    """(a's and b's TensorArgs, A's and B's ws dtypes): ``dtypes`` when given (checked by the
    caller), else both float16 or both bfloat16; ArgumentError for other dtypes, ranks, or
    two devices."""
    ta, tb = _arg("a", a), _arg("b", b)
    dtype, b_dtype = dtypes or (_IN.get(str(ta.dtype)),) * 2
    if dtypes is None and (dtype is None or tb.dtype != ta.dtype):
        fp8 = "e4m3" in str(ta.dtype) or "e5m2" in str(ta.dtype)
        raise ArgumentError(f"ws.ops.matmul: a and b have dtypes {ta.dtype} and {tb.dtype}; "
                            "expected both float16 or both bfloat16. Fix: "
                            + ("for FP8 operands call ws.ops.scaled_matmul(a, b, scale_a, "
                               "scale_b), as torch._scaled_mm" if fp8 else
                               f"{cast_code((ta, tb), 'bfloat16')} each of them"))
    if (ta.device, ta.device_index) != (tb.device, tb.device_index):
        raise ArgumentError(f"ws.ops.{op}: a is on {ta.device}, b on {tb.device}; expected one "
                            "device. Fix: move them to the same device")
    check_target(op, ta)
    return ta, tb, dtype, b_dtype


def _matmul(a, b, out, out_dtype, epilogue, tile_n, num_stages, raster, group, schedule,
            splits, dtypes=None, tile_m=None, cluster=(1, 1), stream_k=None, op="matmul"):
    """``dtypes``: (A's, B's) ws dtypes, checked by the caller (scaled_matmul: fp8); None:
    both float16 or both bfloat16. ``op``: the public op the errors name."""
    ta, tb, dtype, b_dtype = _operands(a, b, dtypes, op)
    odt = _out_dtype(out_dtype, dtype, (ta, tb), op)
    batches, m, n, k, a3, b3 = _shapes(ta, tb, op)
    check_arguments(op, tile_n, num_stages, raster, group, schedule, splits, tile_m, cluster)
    batched = a3 or b3
    shape = (batches, m, n) if batched else (m, n)
    if out is not None:
        to = as_tensor_arg(out, "out")
        if to is None or tuple(to.shape) != shape or to.dtype != odt.ir_type:
            got = kind_of(out) if to is None else f"{tuple(to.shape)} {to.dtype}"
            raise ArgumentError(f"ws.ops.{op}: out is {got}; expected shape {shape} of "
                                f"{odt.__name__}. Fix: out="
                                f"{empty_code((ta, tb), shape, _DTYPE_NAMES[odt])}, or leave "
                                "it out")
        check_same_device(op, "out", out, ta, "out=" + empty_code((ta, tb), shape,
                                                             _DTYPE_NAMES[odt]))
        if is_read_only(out):
            raise ArgumentError(f"ws.ops.{op}: out is a read-only array (shape {shape}); "
                                "expected one the kernel may write. Fix: pass a writable "
                                f"array (out={empty_code((ta, tb), shape, _DTYPE_NAMES[odt])}"
                                ", or out.copy()), or leave out= out")
        _check_out_apart(op, to, ta, tb, epilogue, empty_code((ta, tb), shape,
                                                               _DTYPE_NAMES[odt]))
    if a3 and not b3 and _foldable(ta):         # (B, M, K) @ (K, N) is (B * M, K) @ (K, N)
        flat = (batches * m, n)
        out2 = out.reshape(flat) if out is not None and _foldable(as_tensor_arg(out)) else None
        c = _matmul(a.reshape(batches * m, k), b, out2, odt, epilogue, tile_n, num_stages,
                    raster, group, schedule, splits, dtypes, tile_m, cluster, stream_k, op)
        if out is None or out2 is None:             # host work after the launch
            op_plans.plannable(False)
        if out is None:
            return c.reshape(batches, m, n)
        if out2 is None:
            out[...] = c.reshape(batches, m, n)
        return out
    if epilogue is not None:
        from .matmul_epilogues import Epilogue
        if not isinstance(epilogue, Epilogue):
            raise ArgumentError(f"ws.ops.{op}: epilogue={epilogue!r} "
                                f"({type(epilogue).__name__}); expected None or an instance of "
                                "a ws.ops epilogue (a subclass of ws.ops.Epilogue). Fix: "
                                "epilogue=ws.ops.BiasGelu(bias), or your own Epilogue subclass's "
                                "instance")
        epilogue_key(epilogue, op)
        epilogue.check(m, n, batches)
        operands = operands_of(epilogue, op)
        for name, x in zip(operand_names(epilogue, operands), operands):
            check_same_device(op, name, x, ta, "move it to a's device (x.to(a.device))")
    if m * n * batches == 0:
        return out if out is not None else _new(a, shape, odt)
    if k == 0:                       # an empty sum: A and B of zeros, K of 16 bytes
        k = 16 // dtype.ir_type.nbytes
        a = _new(a, tuple(ta.shape[:-1]) + (k,), dtype, True)
        b = _swap(_new(b, tuple(tb.shape[:-2]) + (n, k), b_dtype, True)) \
            if dtype in FP8_DTYPES else _new(b, tuple(tb.shape[:-2]) + (k, n), b_dtype, True)
        ta, tb = as_tensor_arg(a), as_tensor_arg(b)
    if batched and not a3:
        a = a.expand(batches, m, k) if _framework(a) == "torch" else \
            np.broadcast_to(a, (batches, m, k))
        ta = as_tensor_arg(a, "a")
    if batched and not b3:
        b = b.expand(batches, k, n) if _framework(b) == "torch" else \
            np.broadcast_to(b, (batches, k, n))
        tb = as_tensor_arg(b, "b")
    xa, a_arg, a_major = _operand("a", a, ta, dtype, k_inner=True)
    xb, b_arg, b_major = _operand("b", b, tb, b_dtype, k_inner=False)
    sms = _sms(ta)
    if stream_k is True and cluster != (1, 1):
        raise ArgumentError(f"ws.ops.matmul: stream_k=True with cluster={cluster}; expected "
                            "cluster=(1, 1) (the fix-up adds the partial tiles of single CTAs). "
                            "Fix: drop cluster=, or stream_k=True")
    sk = choose_stream_k(m, n, k, batches, sms, schedule, tile_n, group, splits,
                         tile_k_of(dtype), tile_m, stream_k) if cluster == (1, 1) else None
    if sk is not None:
        tm, tn, group, _ = sk
        splits = 1
    else:
        tm, tn, group, splits = choose_config(m, n, k, batches, sms, schedule, tile_n, group,
                                              splits, tile_k_of(dtype), tile_m)
    if splits > 1:
        return _split_k(a, (xa, xb), (a_arg, b_arg), (a_major, b_major), out, shape, odt,
                        (dtype, b_dtype), (m, n, k, batches), epilogue, (tm, tn), num_stages,
                        raster, group, splits, sms, cluster)
    c, c_arg = out, (to if out is not None else None)
    if c is None or not tma_compatible(c_arg):
        per = 16 // odt.ir_type.nbytes
        c = op_plans.fresh(_new(a, shape[:-1] + (-(-n // per) * per,), odt))
        c_arg = None
    if epilogue is None:
        p = policy_for(dtype, odt, a_major, b_major, batched, tn, num_stages, raster, group,
                       schedule, b_dtype=b_dtype, tile_m=tm, cluster=cluster,
                       stream_k=sk is not None)
    else:
        p = make_policy(dtype, odt, a_major, b_major, batched, tn, num_stages, raster, group,
                        schedule, epilogue, b_dtype=b_dtype, tile_m=tm, cluster=cluster,
                        stream_k=sk is not None)
    launch(p, (xa, xb, c), (m, n, k, batches, 1), epilogue, sms, (a_arg, b_arg, c_arg))
    if c is out:
        op_plans.plannable()
        return out
    if out is not None:
        out[...] = c[..., :n]
        return out
    if c.shape[-1] != n:
        c = c[..., :n]
        c = c.contiguous() if _framework(c) == "torch" else np.ascontiguousarray(c)
        return c
    op_plans.plannable()
    return c


def _check_out_apart(op, to, ta, tb, epilogue, new_out: str) -> None:
    """``check_no_overlap`` of ``out`` (``to``) against a, b and the epilogue's tensors (read
    in place allowed), with the shapes the user passed (before a batched fold)."""
    from .matmul_epilogues import Epilogue
    operands = operands_of(epilogue, op) if isinstance(epilogue, Epilogue) else ()
    reads = [("a", ta, False), ("b", tb, False)] + [
        (name, as_tensor_arg(x), True)
        for name, x in zip(operand_names(epilogue, operands), operands)]
    check_no_overlap(op, to, reads, f"out={new_out} (a tensor of its own), or leave out= out")


def _split_k(like, xs, args, majors, out, shape, odt, dtypes, sizes, epilogue, tiles,
             num_stages, raster, group, splits, sms, cluster=(1, 1)):
    """The split-K path: the GEMM's f32 partials into a (batches x splits, M, N) workspace
    (rows padded to 16 bytes), then ``splitk_reduce`` into ``out`` or a new tensor."""
    m, n, k, batches = sizes
    tm, tn = tiles
    p = policy_for(dtypes[0], Float32, majors[0], majors[1], len(shape) == 3, tn, num_stages,
                   raster, group, "cooperative", True, dtypes[1], tm, cluster)
    work = op_plans.fresh(_new(like, (batches * splits, m, -(-n // 4) * 4), Float32))
    launch(p, (xs[0], xs[1], work), (m, n, k, batches, splits), None, sms,
           (args[0], args[1], None))
    c = out if out is not None else op_plans.fresh(_new(like, shape, odt))
    c3 = c if len(shape) == 3 else c[None]
    total = batches * m * n
    operands = tuple(epilogue.operands()) if epilogue is not None else ()
    op_plans.launch(splitk_reduce, (-(-total // REDUCE_THREADS), 1, 1), REDUCE_THREADS,
                    (epilogue, work, c3, m, n, total, splits, operands))
    op_plans.plannable()
    return c


def launch(p: Matmul, tensors, sizes, epilogue=None, sms: int = SIM_CTAS,
           tensor_args=(None, None, None)) -> None:
    """Run ``matmul_kernel`` with policy ``p`` on ``tensors`` = (a, b, c), TMA-readable: a
    (M x K as (M, K) when ``p.a_major == 'K'``, else as its (K, M) transpose), b ((K, N) when
    MN-major, else (N, K)) and c ((M, N), rows padded to 16 bytes allowed: the store clips at
    N; with ``p.split_k`` the (batches x splits, M, N) f32 workspace); batched: a leading batch
    dimension on all three. ``sizes``: (M, N, K, batches, splits). ``sms``: the persistent
    CTAs' upper bound. ``tensor_args``: their TensorArgs where the caller has them."""
    m, n, k, batches, splits = sizes
    a, b, c = tensors
    args = list(tensor_args)
    if c.shape[-1] != n:                       # describe the padded rows as N wide
        c, args[2] = c[..., :n], None
    descs = [descriptor(x, ta or as_tensor_arg(x), box)
             for x, ta, box in zip((a, b, c), args, p.descriptor_boxes())]
    operands = tuple(epilogue.operands()) if epilogue is not None else ()
    if p.stream_k:
        tiles, k_tiles = p.tiles(m, n, batches), -(-k // p.tile_k)
        sk_tiles = stream_k_tiles(tiles, sms, k_tiles)
        ctas = sms if sk_tiles else grid_size(tiles, sms)
        fixup = stream_k_buffers(a, ctas, p.tile_m * p.tile_n)
        try:
            op_plans.launch(matmul_kernel, (ctas, 1, 1), p.threads,
                            (p, *descs, m, n, k, batches, 1, operands, sk_tiles,
                             tuple(map(op_plans.kept, fixup))))
        except BaseException:           # counters may be left part-way: make new ones
            _FIXUP.pop(_fixup_key(a, ctas, p.tile_m * p.tile_n), None)
            raise
        return
    if p.cluster == (1, 1):
        ctas = grid_size(p.tiles(m, n, batches, splits), sms)
        op_plans.launch(matmul_kernel, (ctas, 1, 1), p.threads,
                        (p, *descs, m, n, k, batches, splits, operands, 0, ()))
        return
    op_plans.plannable(False)                 # a cluster launch (cuLaunchKernelEx) is not kept
    size = p.cluster[0] * p.cluster[1]        # clusters of adjacent tiles (ClusterTileScheduler)
    ctas = size * grid_size(p.cluster_tiles(m, n, batches, splits), max(1, sms // size))
    matmul_kernel(p, *descs, m, n, k, batches, splits, operands, 0, (), grid=(ctas, 1, 1),
                  block=(p.threads, 1, 1), cluster=(size, 1, 1))


_FIXUP: dict = {}
"""(framework, device, CTAs, tile elements) -> (workspace, counters) of stream-K launches."""


def _fixup_key(like, ctas: int, tile: int) -> tuple:
    fw = _framework(like)
    return (fw, str(like.device) if fw == "torch" else "host", ctas, tile)


def stream_k_buffers(like, ctas: int, tile: int) -> tuple:
    """(workspace, counters) of a stream-K launch on ``ctas`` CTAs with ``tile``-element tiles,
    on ``like``'s device: a 1-D f32 workspace of ``2 x ctas`` partial tiles (a CTA's first and
    last unit; ``ws.sched.stream_k_slot``) and ``2 x ctas`` int32 counters (at least the
    stream-K tiles, ``matmul_plan.stream_k_tiles``), zero when made and left zero by every
    launch, so they are made once (cached) and never cleared."""
    key = _fixup_key(like, ctas, tile)
    got = _FIXUP.get(key)
    if got is None:
        got = _FIXUP[key] = (_new(like, (2 * ctas * tile,), Float32),
                             _new(like, (2 * ctas,), Int32, True))
    return got
