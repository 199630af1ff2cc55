"""The online softmax of both FlashAttention kernels, as a mixin of ``AttentionPolicy``
(``attention_common.py``): base-2 exponentials of a thread's accumulator elements, the running
row max and row sum, the rescale of O, and the three forms of the exponent (docs/performance.md,
"The exponent"):

- exact (default): ``p = 2^((s - m) c)``, an FADD and an FMUL per score; ``s - m`` is exact
  near the max (Sterbenz), so the row max's term is exactly 1 for any finite scores.
- ``fma_scores``: one FFMA ``s c - m c`` per score while a warp vote finds every row's
  |m c| < 2^15, the exact form otherwise (a branch in the softmax's basic block).
- ``fma_select``: one FFMA ``fma(s, c_r, -o_r)`` per score with no branch; the row's scale
  ``c_r`` and offset ``o_r`` are chosen once per row by ``row_offset`` (selects), and the
  rescale factor ``alpha`` is computed from the offsets, so that every tile's terms share one
  row-wide factor that the normalization cancels exactly.

Element ``i`` of the flattened accumulator belongs to row half ``(i / 2) % 2`` (the layout in
``attention_common.py``'s docstring); a thread holds two rows.
"""
from __future__ import annotations

import math

import warpstage as ws

from ..lang.scalars import Float32

__all__ = ["OnlineSoftmax", "FMA_SELECT_LIMIT"]

_NEG_INF = -math.inf
FMA_SELECT_LIMIT = 2.0 ** 24
"""|m c| below which ``fma_select`` subtracts o = RN(m c): the float nearest m c is then within
1/2 of it (floats below 2^24 are at most 1 apart), so a row's largest term is 2^d with
|d| <= 1/2. At and above it the row takes the power-of-two scale (``OnlineSoftmax.row_offset``)."""


def tree(fn, xs):
    """fn folded over xs as a balanced tree (short dependency chains)."""
    while len(xs) > 1:
        xs = [fn(xs[i], xs[i + 1]) if i + 1 < len(xs) else xs[i] for i in range(0, len(xs), 2)]
    return xs[0]


class OnlineSoftmax:
    """Online-softmax methods of the attention policies. Reads the policy's ``exp2_scale`` (c),
    ``fast_exp2``, ``causal``, ``causal_align``, ``elements`` / ``fragments`` and the exponent
    fields below."""

    fma_scores = False
    """Take ``p = 2^(s c - m c)`` as one FFMA per score when a warp vote finds it exact enough
    (the policies that have no such field: never)."""
    FMA_SAFE = 32768.0
    """|m c| below which the ``fma_scores`` form is used: the rounding of m c (at most 2^-9 here)
    shifts a whole row's exponents alike, which the normalization cancels."""
    fma_select = False
    """Take ``p = 2^(fma(s, c_r, -o_r))``, one FFMA per score and no branch (``row_offset``);
    the policies that have no such field: never."""
    poly_exp2 = 0
    """P elements of every 8 whose exponential runs on the FMA pipe (``ws.math.exp2_poly``)
    instead of the MUFU; 0 in the policies that have no such field."""
    rescale_threshold = None
    """Powers of two by which a tile's row max may exceed the running max before the running
    max moves (``stale_max``); None (the policies that have no such field): it always moves."""
    MAX_RESCALE_THRESHOLD = 15.0
    """The largest ``rescale_threshold``: P's terms reach 2^(t + 1/2), and fp16 P (largest
    finite 65504 < 2^16) must hold them."""

    def set_rescale_threshold(self, t) -> None:
        """Check and store ``rescale_threshold`` (None, or a real number in [0, 15]); raises
        OperandError (a ValueError) otherwise."""
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float))
                              or not 0.0 <= t <= self.MAX_RESCALE_THRESHOLD):
            raise self.policy_error("rescale_threshold", t, "None or a number in [0, 15] "
                                    "(powers of two a row's max may rise by before O is "
                                    "rescaled; P's terms reach 2^(t + 1/2), which fp16 "
                                    "holds up to t = 15)", "rescale_threshold=8.0, or None")
        self.rescale_threshold = None if t is None else float(t)

    @staticmethod
    def softmax_start() -> tuple:
        """The running row max and row sum (m, l) of this thread's two rows before any key."""
        return [Float32(_NEG_INF), Float32(_NEG_INF)], [Float32(0.0), Float32(0.0)]

    def uses_fma_select(self) -> bool:
        """Whether the exponent is ``fma_select``'s (static; with a scale <= 0 the scores are
        scaled first and c = 1, so the exact form is one FADD already)."""
        return bool(self.fma_select) and self.exp2_scale != 1.0

    def softmax_update(self, s, m_i, l_i):
        """One online-softmax step in base 2 on the scores ``s`` (row half r: the elements i
        with (i / 2) % 2 == r): each row's max over its quad of 4 lanes (``shfl.sync.bfly`` 1
        and 2), ``m' = max(m, rowmax)``, ``alpha`` (``rescale_factor``), ``p = 2^((s - m') c)``
        (``exponentials``; ``ex2.approx.ftz`` with ``fast_exp2``), ``l = l alpha + rowsum(p)``
        (per lane; the quad's partial sums are added by ``row_inverse``). Returns (P as f32
        fragments, m', l, alpha).

        Why ``(s - m') c`` and not one FMA ``s c - m' c``: the FMA subtracts the rounded
        product m' c, whose rounding error (up to half an ulp of m' c: 512 at |m' c| ~ 1e10)
        lands in the exponent, so for large scores every p overflows to inf (or underflows to
        0) and O = inf / inf = NaN. ``s - m'`` is exact near the max (Sterbenz) and <= 0, so
        p <= 1 and the row's max term is exactly 1 for any finite scores. ``fma_select`` keeps
        the FMA and bounds that error instead (``row_offset``)."""
        x, m_new, alpha = self.softmax_max(s, m_i)
        p = self.exponentials(x, m_new)
        return self.fragments(p), m_new, self.row_sums(p, l_i, alpha), alpha

    def softmax_begin(self, s, m_i):
        """``softmax_update``'s first half, up to the exponentials: each row's new max, alpha,
        and P's exponent arguments (``exponent_arguments``). Returns (arguments, m', alpha);
        ``softmax_end`` finishes the step. Not for ``fma_scores`` (its exponent form is chosen
        by a branch around the exponentials)."""
        x, m_new, alpha = self.softmax_max(s, m_i)
        return self.exponent_arguments(x, m_new), m_new, alpha

    def softmax_end(self, args, l_i, alpha):
        """``softmax_update``'s second half: P = 2^args (``exp2_of``) and ``l = l alpha +
        rowsum(P)``. Returns (P as f32 fragments, l)."""
        p = [self.exp2_of(i, a) for i, a in enumerate(args)]
        return self.fragments(p), self.row_sums(p, l_i, alpha)

    def row_sums(self, p, l_i, alpha) -> list:
        """Each row half's ``l alpha + sum(P)`` (per lane; ``row_inverse`` adds the quad's)."""
        half = [[i for i in range(len(p)) if (i >> 1) & 1 == r] for r in range(2)]
        return [ws.math.fma(l_i[r], alpha[r], tree(lambda a, b: a + b, [p[i] for i in half[r]]))
                for r in ws.static_range(2)]

    def softmax_max(self, s, m_i):
        """The scores' elements, each row's new running max m' (the quad's max, ``stale_max``)
        and alpha (``rescale_factor``, ``kept_one``). Returns (elements, m', alpha)."""
        x = self.elements(s)
        half = [[i for i in range(len(x)) if (i >> 1) & 1 == r] for r in range(2)]
        m_new, alpha = [], []
        for r in ws.static_range(2):
            mx = tree(ws.math.max, [x[i] for i in half[r]])
            mx = ws.math.max(mx, ws.arch.shfl_xor_sync(mx, 1))
            mx = ws.math.max(mx, ws.arch.shfl_xor_sync(mx, 2))
            m = ws.math.max(m_i[r], mx)
            if ws.static(self.rows_may_be_empty()):
                # a row that has seen no key yet has m = -inf: subtract 0 instead (p = 0,
                # alpha = 0) so that -inf - -inf does not make NaN
                m = ws.math.select(m == _NEG_INF, 0.0, m)
            m = self.stale_max(m_i[r], m)
            m_new.append(m)
            alpha.append(self.kept_one(m_i[r], m, self.rescale_factor(m_i[r], m)))
        return x, m_new, alpha

    def stale_max(self, m_old, m):
        """The running max a row keeps after a tile whose scores raise it from ``m_old`` to
        ``m`` (dynamic f32, m >= m_old): with ``rescale_threshold`` t, ``m_old`` while
        (m - m_old) c <= t, else ``m``; without, ``m``. A kept max gives alpha = 1 exactly
        (``rescale_factor``: 2^0), so the rescale of O and l is a no-op that the overlapped
        loop skips (``WgmmaConsumer.rescale_at_wait_of``), and the tile's terms are at most
        2^t times the max's (2^(t + 1/2) with ``fma_select``'s offset). Every term of l and O
        then carries the same factor relative to the exact form, so O / l is unchanged and the
        log-sum-exp, taken from the kept max and l, too. A row before its first key
        (m_old = -inf) always moves; alpha of a kept max is set to 1 (``kept_one``)."""
        if ws.static(self.rescale_threshold is None):
            return m
        rise = self.scaled(m - m_old)               # +inf for m_old = -inf: the max moves
        return ws.math.select(rise <= self.rescale_threshold, m_old, m)

    def kept_one(self, m_old, m, alpha):
        """With ``rescale_threshold``: alpha, or exactly 1 for a row whose max did not move
        (``ex2.approx`` of 0 need not be 1 exactly), which the overlapped loop's vote reads;
        without, alpha as it is."""
        if ws.static(self.rescale_threshold is None):
            return alpha
        return ws.math.select(m == m_old, 1.0, alpha)

    def rescale_factor(self, m_old, m_new):
        """alpha, the factor that takes a row's O and l from max ``m_old`` to ``m_new``:
        ``2^((m_old - m_new) c)``, or with ``fma_select`` the ratio of the two offsets'
        factors, ``2^(fma(m_old, c_new, -o_new) - d_old)`` (d_old = m_old c_old - o_old,
        exact), which is ``2^(o_old - o_new)`` when the scales agree: then the old terms
        2^(s c - o_old) times alpha are exactly the new form's 2^(s c - o_new). A row before
        its first key (m_old = -inf: l and O are 0) takes alpha = 1."""
        approx = self.fast_exp2
        if ws.static(not self.uses_fma_select()):
            return ws.math.exp2(self.scaled(m_old - m_new), approx=approx)
        m_old = ws.math.select(m_old == _NEG_INF, m_new, m_old)
        c_new, o_new = self.row_offset(m_new)
        shift = ws.math.fma(m_old, c_new, -o_new) - self.offset_error(m_old)
        return ws.math.exp2(shift, approx=approx)

    def row_offset(self, m):
        """(c_r, o_r) of a row with running max ``m`` (dynamic f32) for ``fma_select``'s
        ``p = 2^(fma(s, c_r, -o_r))``. For |m c| < ``FMA_SELECT_LIMIT``: (c, RN(m c)); the max
        term is 2^d with d = m c - RN(m c), |d| <= 1/2 (p <= 2^(1/2)). Above it: (c2, m c2)
        with c2 = 2^floor(log2 c) (``pow2_scale``), whose product with m is exact, so d = 0;
        there the fp32 scores are themselves rounded by ulp(s) c >= 1/2 in the exponent and a
        row's nearest distinct scores differ by as much, and the softmax (a convex
        combination of V's rows either way) keeps its ties and order but takes a temperature
        up to 2x lower (docs/performance.md)."""
        c, c2 = self.exp2_scale, self.pow2_scale()
        mc = m * c
        big = ws.math.abs(mc) >= FMA_SELECT_LIMIT
        return ws.math.select(big, c2, c), ws.math.select(big, m * c2, mc)

    def pow2_scale(self) -> float:
        """2^floor(log2 c): the largest power of two at most ``exp2_scale`` (static)."""
        return 2.0 ** math.floor(math.log2(self.exp2_scale))

    def offset_error(self, m):
        """d = m c_r - o_r of ``row_offset(m)``: exact (the rounding error of a product is a
        float, and one FFMA computes it), the log2 of the factor all of the row's terms carry."""
        c_r, o_r = self.row_offset(m)
        return ws.math.fma(m, c_r, -o_r)

    def exponentials(self, x, m_new) -> list:
        """P's elements ``2^((x_i - m_r) c)`` for row half r = (i / 2) % 2 (``exp2_of``), as
        ``(x_i - m_r) * c`` (exact near the max for any finite scores); with ``fma_select`` as
        one FFMA ``fma(x_i, c_r, -o_r)`` (``row_offset``); with ``fma_scores`` as one FFMA
        ``x_i c - m_r c`` when every row of the warp has |m c| < ``FMA_SAFE``
        (``fma_exponentials``)."""
        if ws.static(self.fma_scores and self.exp2_scale != 1.0 and not self.uses_fma_select()):
            return self.fma_exponentials(x, m_new)
        exponent = self.exponent_form(m_new)
        return [self.exp2_of(i, exponent(i, x[i])) for i in range(len(x))]

    def exponent_arguments(self, x, m_new) -> list:
        """The exponents of ``exponentials``, all of them before any ``exp2``
        (``softmax_begin``); not the ``fma_scores`` form (a branch picks it)."""
        exponent = self.exponent_form(m_new)
        return [exponent(i, x[i]) for i in range(len(x))]

    def exponent_form(self, m_new):
        """``f(i, x_i)``: element i's exponent, ``fma_select``'s FFMA with the rows' offsets
        (``row_offset``, computed here, once per row) or the exact ``(x_i - m_r) c``."""
        if ws.static(self.uses_fma_select()):
            offsets = [self.row_offset(m) for m in m_new]
            return lambda i, xi: ws.math.fma(xi, offsets[(i >> 1) & 1][0],
                                             -offsets[(i >> 1) & 1][1])
        return lambda i, xi: self.scaled(xi - m_new[(i >> 1) & 1])

    @ws.jit
    def fma_exponentials(self, x, m_new):
        """``exponentials`` with ``fma_scores``: a warp vote picks the single-FFMA form (the
        common case) or the exact two-instruction one (scores of magnitude ~1e5 and more)."""
        c = self.exp2_scale
        mc = [m * c for m in m_new]
        if ws.arch.vote_all(ws.math.max(ws.math.abs(mc[0]), ws.math.abs(mc[1])) < self.FMA_SAFE):
            p = [self.exp2_of(i, ws.math.fma(x[i], c, -mc[(i >> 1) & 1]))
                 for i in range(len(x))]
        else:
            p = [self.exp2_of(i, (x[i] - m_new[(i >> 1) & 1]) * c) for i in range(len(x))]
        return p

    def exp2_of(self, i: int, x):
        """2^x for P's element ``i`` (static): ``ws.math.exp2_poly`` for ``poly_exp2`` of every
        8 elements, else ``ws.math.exp2`` (``approx`` with ``fast_exp2``)."""
        if ws.static(i % 8 < self.poly_exp2):
            return ws.math.exp2_poly(x)
        return ws.math.exp2(x, approx=self.fast_exp2)

    def scaled(self, d):
        """``d * exp2_scale`` (no multiply when the scale is 1: the scores were scaled first)."""
        return d if ws.static(self.exp2_scale == 1.0) else d * self.exp2_scale

    def rescale(self, acc, alpha):
        """O with row half r (elements i with (i / 2) % 2 == r) times alpha[r]."""
        return self.fragments([a * alpha[(i >> 1) & 1]
                               for i, a in enumerate(self.elements(acc))])

    def rows_may_be_empty(self) -> bool:
        """Whether a query row can see no key in a visited tile, or none at all (causal,
        bottom-right alignment with S_q > S_k): top-left causal rows always see key 0 first."""
        return self.causal and self.causal_align == "bottom_right"

    def row_sum(self, l):
        """The row sum of l: the quad's 4 per-lane partial sums added (``shfl.sync.bfly`` 1, 2)."""
        total = l + ws.arch.shfl_xor_sync(l, 1)
        return total + ws.arch.shfl_xor_sync(total, 2)

    def row_inverse(self, l):
        """1 / l of one row (``row_sum`` first); 0 for a row that saw no key (l = 0), whose
        output is then 0, as FlashAttention's."""
        total = self.row_sum(l)
        if ws.static(self.rows_may_be_empty()):
            return ws.math.select(total == 0.0, 0.0, 1.0 / total)
        return 1.0 / total

    def log2_sum_shift(self, m):
        """What ``log2(l)`` exceeds the row's exact ``log2(sum_j 2^((s_j - m) c))`` by: the
        offset error d of ``fma_select`` (``offset_error``), else 0 (static)."""
        if ws.static(self.uses_fma_select()):
            return self.offset_error(m)
        return 0.0
