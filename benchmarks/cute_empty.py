"""The CuTe DSL kernel of ``launch_overhead.py``'s CuTe row: 4 tensors + 1 int, an empty body.

Kept in a module of its own, without ``from __future__ import annotations``: the CuTe DSL reads
a kernel's annotations as objects (``cute.Tensor``, ``cutlass.Int32``); as strings they are
resolved in the module's globals, where a function-local ``import cutlass.cute as cute`` is not
(session 16 on the GPU: ``NameError: name 'cute' is not defined``). Importing this module
raises whatever ``import cutlass.cute`` raises."""
import cutlass
import cutlass.cute as cute


@cute.kernel
def empty(t0: cute.Tensor, t1: cute.Tensor, t2: cute.Tensor, t3: cute.Tensor, n: cutlass.Int32):
    pass


@cute.jit
def launch(t0: cute.Tensor, t1: cute.Tensor, t2: cute.Tensor, t3: cute.Tensor, n: cutlass.Int32):
    empty(t0, t1, t2, t3, n).launch(grid=(8, 1, 1), block=(128, 1, 1))
