"""Vector add: out[i] = a[i] + b[i] for any length, dtype and stride.

Run: python examples/vector_add.py   (on the GPU if present, else in the CPU simulator)
"""
import numpy as np

import warpstage as ws


@ws.kernel
def vector_add(a: ws.Tensor, b: ws.Tensor, out: ws.Tensor, n: ws.Int32):
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    if i < n:
        out[i] = a[i] + b[i]


BLOCK = 256


def launch(a, b, out):
    """Launch vector_add over 1-D tensors ``a``, ``b``, ``out`` of one length and dtype."""
    n = out.shape[0]
    vector_add[(n + BLOCK - 1) // BLOCK, BLOCK](a, b, out, n)


def main(n: int = 1000):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    if ws.get_target() == "cuda":
        import torch
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        out = torch.empty_like(ta)
        launch(ta, tb, out)
        torch.cuda.synchronize()
        got = out.cpu().numpy()
    else:
        got = np.full(n, np.nan, np.float32)
        launch(a, b, got)
    err = float(np.max(np.abs(got - (a + b))))
    verdict = "OK" if err <= 1e-6 else "MISMATCH"     # float32 a + b is exact: expect 0
    print(f"vector_add n={n} on {ws.get_target()}: max error {err:.3g} -> {verdict}")
    return err


if __name__ == "__main__":
    main()
