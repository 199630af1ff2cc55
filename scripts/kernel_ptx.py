"""Compile the library's own kernels for sm_90a on the CPU and write each one's PTX, to check
that a change to their index math leaves the PTX byte-identical (or to see where it does not).

    PYTHONPATH=. python3 scripts/kernel_ptx.py dump OUT_DIR [SET]  # one .ptx per configuration
    python3 scripts/kernel_ptx.py compare DIR_A DIR_B              # identical / differing names

The configurations cover the GEMM (``ws.ops`` ``matmul_kernel``: both schedules, both majors,
f16/bf16/f32 outputs, batched, split-K, stream-K beside data-parallel at 128 x 256) and the wgmma FlashAttention (D 64 and 128, causal or
not, persistent or not, TMA-store or register epilogue, with a log-sum-exp, three consumer
warpgroups, bottom-right causal): the set ``configs``; and the 20 policies
``ws.ops.flash_attention`` picks by default on an H200 (``wgmma_policy_for``: D = 64, 96, 128,
192, 256, causal or not, S_q up to ``SHORT_SEQ`` or longer), launched as ``launch_wgmma``
does: the set ``defaults``. SET is ``configs``, ``defaults`` or ``all`` (the default). Run ``dump`` once from each tree (``PYTHONPATH`` picks which
warpstage is imported), then ``compare``. The disk cache is off, so each kernel is compiled.
``dump`` also writes ptxas' registers, spills and stack and the SASS instruction count (``.res``,
where ptxas and nvdisasm are installed), which ``compare`` prints for the kernels whose PTX
differs, the IR after the passes (``.wsir``, ``ck.ir``), which ``compare`` checks too
(where both folders have it), and the LLVM IR (``.ll``, ``ck.llvm_ir``: the input of
``benchmarks/llvm_options.py``). No GPU needed.
"""
from __future__ import annotations

import os
import re
import sys
import warnings

MATMUL = {
    "mm-default": dict(),
    "mm-pingpong-At-Bt-f32-batched-f16": dict(schedule="pingpong", tile_n=128, num_stages=5,
                                              a_major="MN", b_major="K", out_dtype="Float32",
                                              batched=True, dtype="Float16"),
    "mm-split-k-Bt": dict(split_k=True, out_dtype="Float32", b_major="K"),
    "mm-n128-f16out": dict(tile_n=128, out_dtype="Float16", a_major="MN"),
    "mm-n64-pingpong": dict(tile_n=64, schedule="pingpong"),
    # data-parallel and stream-K at one tile (docs/matmul.md, "Why the CTAs walk in K step")
    "mm-Bt": dict(b_major="K"),
    "mm-stream-k-Bt": dict(b_major="K", stream_k=True),
}
ATTENTION = {
    "fa-d64": dict(head_dim=64),
    "fa-d128": dict(head_dim=128),
    "fa-d128-causal": dict(head_dim=128, causal=True),
    "fa-d64-causal-br-lse": dict(head_dim=64, causal=True, causal_align="bottom_right",
                                 lse=True),
    "fa-d128-nonpersistent-regstore": dict(head_dim=128, persistent=False, tma_store=False),
    "fa-d64-3wg-serial": dict(head_dim=64, consumer_wgs=3, overlap=False, pingpong=False,
                              num_stages=3),
    "fa-d128-lse-gqa": dict(head_dim=128, lse=True, kv_group=2),
    "fa-d128-joint-ring": dict(head_dim=128, split_kv=False, pingpong=False, num_stages=2),
}


def _dtype(ws, name):
    return getattr(ws, name) if isinstance(name, str) else name


def matmul_kernel(fields: dict):
    import numpy as np
    import warpstage as ws
    from warpstage.ops.matmul_kernel import Matmul, matmul_kernel
    f = {k: _dtype(ws, v) if k in ("dtype", "out_dtype") else v for k, v in fields.items()}
    p = Matmul(**f)
    x = np.zeros(((2,) if p.batched else ()) + (256, 256), np.float32)
    c = np.zeros(((2,) if p.batched or p.split_k else ()) + (256, 256), np.float32)
    ba, bb, bc = p.descriptor_boxes()
    fixup = (ws.Tensor[ws.Float32, 1], ws.Tensor[ws.Int32, 1]) if p.stream_k else ()
    return ws.compile(matmul_kernel, p, _td(ws, x, ba, p.dtype), _td(ws, x, bb, p.dtype),
                      _td(ws, c, bc, p.out_dtype), ws.Int32, ws.Int32, ws.Int32, ws.Int32,
                      ws.Int32, (), ws.Int32, fixup, block=(p.threads, 1, 1))


def _td(ws, arr, box, dtype):
    import numpy as np
    import ml_dtypes
    arr = arr.astype({ws.BFloat16: ml_dtypes.bfloat16, ws.Float16: np.float16,
                      ws.Float32: np.float32}[dtype])
    return ws.tma.TensorDescriptor(arr, box)


def attention_kernel(fields: dict):
    import numpy as np
    import ml_dtypes
    import warpstage as ws
    from warpstage.ops.attention_wgmma import FlashAttentionWgmma, flash_attention_wgmma_kernel
    fields = dict(fields)
    lse = fields.pop("lse", False)
    fa = FlashAttentionWgmma(**fields)
    x = np.zeros((1, 1, 256, fa.head_dim), ml_dtypes.bfloat16)
    q_box, kv_box = fa.descriptor_boxes()
    TD = ws.tma.TensorDescriptor
    o_desc = TD(x, fa.o_box, swizzle=fa.out.swizzle) if fa.tma_store else None
    lse_arg = ws.Tensor[ws.Float32, 3] if lse else None
    return ws.compile(flash_attention_wgmma_kernel, fa, TD(x, q_box), TD(x, kv_box),
                      TD(x, kv_box), ws.Tensor[ws.BFloat16, 4], ws.Int32, lse_arg, o_desc,
                      block=(fa.threads, 1, 1))


DEFAULTS = {f"fa-default-d{d}{'-causal' if causal else ''}{'-short' if short else ''}":
            (d, causal, short)
            for d in (64, 96, 128, 192, 256) for causal in (False, True) for short in (False, True)}


def default_attention_kernel(config: tuple):
    """The default wgmma FlashAttention kernel of ``config`` = (head_dim, causal, short), with
    the arguments ``launch_wgmma`` passes it (descriptors of the policy's swizzle, no LSE, the
    output's descriptor with a TMA-store epilogue, the tile counters with ``dynamic_tiles``)."""
    import numpy as np
    import ml_dtypes
    import warpstage as ws
    from warpstage.ops import attention
    head_dim, causal, short = config
    fa = attention.wgmma_policy_for(head_dim, "BFloat16", causal, head_dim ** -0.5, short=short)
    x = np.zeros((1, 1, 256, head_dim), ml_dtypes.bfloat16)
    q_box, kv_box = fa.descriptor_boxes()
    TD = ws.tma.TensorDescriptor
    o_desc = TD(x, fa.o_box, swizzle=fa.out.swizzle) if fa.tma_store else None
    tiles = ws.Tensor[ws.Int32, 1] if fa.dynamic_tiles else None
    q, k, v = (TD(x, box, swizzle=fa.swizzle) for box in (q_box, kv_box, kv_box))
    return ws.compile(attention.flash_attention_wgmma_kernel, fa, q, k, v,
                      ws.Tensor[ws.BFloat16, 4], ws.Int32, None, o_desc, tiles,
                      block=(fa.threads, 1, 1))


def jobs_of(which: str) -> list:
    """(name, compile function, its argument) of the set ``which``: configs, defaults, all."""
    jobs = []
    if which in ("configs", "all"):
        jobs += [(n, matmul_kernel, f) for n, f in MATMUL.items()]
        jobs += [(n, attention_kernel, f) for n, f in ATTENTION.items()]
    if which in ("defaults", "all"):
        jobs += [(n, default_attention_kernel, c) for n, c in DEFAULTS.items()]
    if not jobs:
        raise SystemExit(f"kernel_ptx.py: unknown set {which!r}; expected configs, defaults "
                         "or all")
    return jobs


def dump(out: str, which: str = "all") -> int:
    os.environ["WARPSTAGE_CACHE_DIR"] = ""        # the disk cache off: every kernel is compiled
    warnings.simplefilter("ignore")
    os.makedirs(out, exist_ok=True)
    jobs = jobs_of(which)
    for name, fn, fields in jobs:
        try:
            ck = fn(fields)
            text, res, ir_text, llvm_ir = ck.ptx, resources(ck), ck.ir, ck.llvm_ir
        except Exception as e:             # the failure is the artifact
            text = res = ir_text = llvm_ir = f"ERROR {type(e).__name__}: {e}\n"
        for ext, body in ((".ptx", text), (".res", res), (".wsir", ir_text), (".ll", llvm_ir)):
            with open(os.path.join(out, name + ext), "w") as f:
                f.write(body)
        print(f"{name:36s} {len(text.splitlines()):6d} lines  {res.strip()}")
    return 0


def resources(ck) -> str:
    """ptxas' registers / spills / stack and the SASS instruction count ("-" where ptxas or
    nvdisasm is missing)."""
    r = ck.resources
    sass = ck.sass
    count = len(re.findall(r"^\s+/\*[0-9a-f]{4,}\*/", sass, re.M)) if sass else "-"
    if r is None:
        return "no ptxas\n"
    return (f"registers {r.registers} spill_stores {r.spill_stores} spill_loads "
            f"{r.spill_loads} stack {r.stack_frame} sass_instructions {count}\n")


def compare(a: str, b: str) -> int:
    names = sorted({n[:-4] for d in (a, b) for n in os.listdir(d) if n.endswith(".ptx")})
    bad = 0
    for n in names:
        same = _read(os.path.join(a, n + ".ptx")) == _read(os.path.join(b, n + ".ptx"))
        ir_a, ir_b = (_read(os.path.join(d, n + ".wsir")) for d in (a, b))
        ir_same = ir_a is None or ir_b is None or ir_a == ir_b     # older dumps have no .wsir
        bad += not (same and ir_same)
        line = f"{'identical' if same else 'DIFFERS  '}  {n}" + ("" if ir_same else "  (IR differs)")
        if not same:
            res = [(_read(os.path.join(d, n + ".res")) or "-").strip() for d in (a, b)]
            line += f"\n      {res[0]}\n   -> {res[1]}"
        print(line)
    return 1 if bad else 0


def _read(path: str):
    """The PTX at ``path`` with the entry's name suffix (``_7``: kernels compiled earlier in the
    same process) dropped, or None."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return re.sub(r"(_kernel)_\d+", r"\1", f.read())


if __name__ == "__main__":
    if len(sys.argv) in (3, 4) and sys.argv[1] == "dump":
        sys.exit(dump(*sys.argv[2:]))
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    sys.exit(__doc__)
