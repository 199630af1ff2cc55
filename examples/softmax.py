"""Row softmax over a 2-D tensor: out[r, :] = softmax(x[r, :]), computed in float32.

One thread per row with dynamic loops over the columns (any column count, any strides, f16 /
bf16 / f32 in and out). This is the foundation version: it shows dynamic loops and loop-carried
values; a warp-per-row version with shuffles comes with the warp-level ops.

Run: python examples/softmax.py
"""
import numpy as np

import warpstage as ws

LOG2E = 1.4426950408889634


@ws.kernel
def softmax(x: ws.Tensor, out: ws.Tensor, n_rows: ws.Int32, n_cols: ws.Int32):
    row = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    if row < n_rows:
        row_max = ws.Float32(-float("inf"))
        for j in range(n_cols):
            row_max = ws.math.max(row_max, ws.Float32(x[row, j]))
        total = ws.Float32(0.0)
        for j in range(n_cols):
            total = total + ws.math.exp2((ws.Float32(x[row, j]) - row_max) * LOG2E)
        inv = 1.0 / total
        for j in range(n_cols):
            out[row, j] = ws.math.exp2((ws.Float32(x[row, j]) - row_max) * LOG2E) * inv


BLOCK = 128


def launch(x, out):
    """Launch softmax over the rows of 2-D ``x`` into ``out`` (same shape)."""
    rows, cols = x.shape
    softmax[(rows + BLOCK - 1) // BLOCK, BLOCK](x, out, rows, cols)


def reference(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main(rows: int = 37, cols: int = 50):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    if ws.get_target() == "cuda":
        import torch
        tx = torch.from_numpy(x).cuda()
        out = torch.empty_like(tx)
        launch(tx, out)
        torch.cuda.synchronize()
        got = out.cpu().numpy()
    else:
        got = np.full_like(x, np.nan)
        launch(x, got)
    err = float(np.max(np.abs(got - reference(x))))
    verdict = "OK" if err <= 1e-5 else "MISMATCH"     # float32 exp/sum: a few ulps
    print(f"softmax {rows}x{cols} on {ws.get_target()}: max error {err:.3g} -> {verdict}")
    return err


if __name__ == "__main__":
    main()
