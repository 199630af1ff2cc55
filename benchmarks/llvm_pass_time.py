"""LLVM's pass timers on a FlashAttention kernel's LLVM IR: which O3 pass and which NVPTX
codegen pass the ``ptx`` stage spends its time in (CPU host, no GPU).

    PYTHONPATH=. python3 benchmarks/llvm_pass_time.py [wgmma|mma.sync] [64|128] [--top N]

The kernel is compiled with ``ws.compile`` (the disk cache off) as ``ws.ops.flash_attention``
would build it (bf16, non-causal; the wgmma kernel with its long-sequence policy), then its
``llvm_ir`` is run again through ``llvmlite.binding`` the way ``backend/llvm_c`` runs it (the
default per-module pipeline at O3, then the NVPTX TargetMachine), with the new pass manager's
timers on O3 (``PassBuilder.start_pass_timing``) and the legacy timers on codegen
(``set_time_passes``). Each row is LLVM's own line: user, system, user+system and wall seconds,
the pass. Works on older trees (``PYTHONPATH`` picks which warpstage is imported).
"""
from __future__ import annotations

import argparse
import os
import re
import time


def compile_kernel(mma: str, head_dim: int):
    import warpstage as ws
    from warpstage.ops import attention
    if mma == "mma.sync":
        fa = attention.policy_for(head_dim, "BFloat16", False, head_dim ** -0.5, "cp.async")
        T = ws.Tensor[ws.BFloat16, 4]
        return ws.compile(attention.flash_attention_kernel, fa, T, T, T, T, block=fa.threads)
    import numpy as np
    import ml_dtypes
    fa = attention.wgmma_policy_for(head_dim, "BFloat16", False, head_dim ** -0.5)
    x = np.zeros((1, 1, 256, head_dim), ml_dtypes.bfloat16)
    q_box, kv_box = fa.descriptor_boxes()
    TD = ws.tma.TensorDescriptor
    return ws.compile(attention.flash_attention_wgmma_kernel, fa, TD(x, q_box), TD(x, kv_box),
                      TD(x, kv_box), ws.Tensor[ws.BFloat16, 4], ws.Int32, None,
                      TD(x, fa.o_box) if fa.tma_store else None,
                      ws.Tensor[ws.Int32, 1] if fa.dynamic_tiles else None,
                      block=(fa.threads, 1, 1))


def timed_passes(llvm_ir: str, arch: str = "sm_90a", features: str = "+ptx80"):
    """(O3 CPU seconds, codegen CPU seconds, O3 report lines, codegen report lines)."""
    import llvmlite.binding as llvm
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    triple = "nvptx64-nvidia-cuda"
    tm = llvm.Target.from_triple(triple).create_target_machine(cpu=arch, features=features, opt=3)
    mod = llvm.parse_assembly(llvm_ir)
    mod.verify()
    mod.triple = triple
    mod.data_layout = str(tm.target_data)
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
    pb.start_pass_timing()
    t = time.process_time()
    pb.getModulePassManager().run(mod, pb)
    o3 = time.process_time() - t
    o3_report = pb.finish_pass_timing()
    llvm.set_time_passes(True)
    t = time.process_time()
    tm.emit_assembly(mod)
    codegen = time.process_time() - t
    codegen_report = llvm.report_and_reset_timings()
    llvm.set_time_passes(False)
    return o3, codegen, _rows(o3_report), _rows(codegen_report)


def _rows(report: str) -> list:
    """The per-pass lines of an LLVM timing report, largest first, each pass once (the new
    pass manager's report lists a pass's total twice)."""
    seen, out = set(), []
    for line in report.splitlines():
        if re.match(r"\s+\d+\.\d+ \(", line) and line.split(")")[-1] not in seen:
            seen.add(line.split(")")[-1])
            out.append(line.rstrip())
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mma", nargs="?", default="wgmma", choices=("wgmma", "mma.sync"))
    ap.add_argument("head_dim", nargs="?", type=int, default=128)
    ap.add_argument("--top", type=int, default=8)
    args = ap.parse_args()
    os.environ["WARPSTAGE_CACHE_DIR"] = ""          # the disk cache off: a real compile
    ck = compile_kernel(args.mma, args.head_dim)
    o3, codegen, o3_rows, codegen_rows = timed_passes(ck.llvm_ir)
    print(f"{args.mma} D={args.head_dim}: {ck.llvm_ir.count(chr(10))} LLVM IR lines; "
          f"O3 {1e3 * o3:.0f} ms CPU, NVPTX codegen {1e3 * codegen:.0f} ms CPU")
    for title, rows in (("O3", o3_rows), ("codegen", codegen_rows)):
        print(f"-- {title} (user, system, user+system, wall seconds)")
        print("\n".join(rows[:args.top]))


if __name__ == "__main__":
    main()
