"""Address splitting: the ``ptr.offset`` chains of unrolled tile code become one shared dynamic
address per distinct dynamic part, plus a constant offset each.

Contract: valid IR in, valid IR out, the same addresses. An address is a root pointer (one
that is not a ``ptr.offset`` result) and the indices of the ``ptr.offset`` chain that leads to
it; each index is split into a linear form (dynamic terms with integer coefficients, plus a
constant) through ``arith.add`` / ``sub`` and ``mul`` by a constant, wherever a range analysis
(:func:`value_range`) proves that the op did not wrap: then the op's integer value is the sum
of its parts, and so is the address (the backend extends each index by its signedness and
adds in 64 bits, where regrouping is exact). Every ``ptr.offset`` whose address has a dynamic
part D and a constant C becomes ``ptr.offset(base, C)`` (or ``base`` when C is 0), with
``base = root + D`` built once per (root, D) in scope: right before its first use, in scope
for the rest of that block and the regions nested after it (which it dominates), as in
``passes/cse``. D is built in each link's index type as ``t1 * k1 + t2 * k2 + ...``, only
where the ranges prove that no partial sum wraps; a link that cannot be split keeps its index
as its dynamic part. Ops left unused are removed by the DCE that follows.

Why: a FlashAttention tile of the ``mma.sync`` kernel unrolls 772 ``ptr.offset``s whose
indices differ only by constants (``row * stride + col`` for static rows and columns), and
LLVM's straight-line strength reduction (NVPTX codegen) searched every earlier address of a
block for a basis: 64% of codegen at D=128 (docs/compile-time.md). After this pass they share
92 bases and the rest are ``getelementptr base, <constant>``, which PTX addresses as
``[%r + imm]`` and SLSR does not search.
"""
from __future__ import annotations

from ..ir import Module
from ..ir.core import Block, Operation, Value
from ..ir.types import ScalarType

__all__ = ["split_address_constants", "value_range"]

_DEPTH = 64
"""Past this many ops up a value's definitions, the analyses stop (an unknown range, an opaque
term): sound, and it bounds the recursion."""

_SREG_RANGES = {"laneid": (0, 31), "cluster.ctarank": (0, 15), "cluster.nctarank": (1, 16)}
for _d, _hi in (("x", 1023), ("y", 1023), ("z", 63)):
    _SREG_RANGES[f"tid.{_d}"] = (0, _hi)
    _SREG_RANGES[f"ntid.{_d}"] = (1, _hi + 1)
    _SREG_RANGES[f"cluster.ctaid.{_d}"] = (0, 15)
    _SREG_RANGES[f"cluster.nctaid.{_d}"] = (1, 16)
for _d, _hi in (("x", 2 ** 31 - 1), ("y", 65535), ("z", 65535)):
    _SREG_RANGES[f"ctaid.{_d}"] = (0, _hi - 1)
    _SREG_RANGES[f"nctaid.{_d}"] = (1, _hi)
"""CUDA's limits: threads per CTA (x, y <= 1024, z <= 64), grid (x < 2^31, y and z <= 65535),
a cluster of at most 16 CTAs, 32 lanes."""


def _bounds(t) -> tuple:
    """The values an integer type holds."""
    if t.kind == "uint":
        return 0, (1 << t.bits) - 1
    if t.kind == "bool":
        return 0, 1
    return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1


def _is_int(t) -> bool:
    return isinstance(t, ScalarType) and t.is_int


def _constant(v: Value):
    o = v.owner
    if isinstance(o, Operation) and o.name == "arith.constant" and _is_int(v.type):
        return o.attrs["value"]
    return None


class _Ranges:
    """``value_range`` memoized per value: interval arithmetic over the integer ops, where a
    result outside its type's bounds (the op wrapped) or any other op gives the type's bounds."""

    def __init__(self):
        self.memo: dict = {}

    def of(self, v: Value, depth: int = 0) -> tuple:
        r = self.memo.get(id(v))
        if r is None:
            r = _bounds(v.type)
            if depth < _DEPTH and isinstance(v.owner, Operation):
                got = self._op(v.owner, depth + 1)
                if got is not None:
                    lo, hi = got
                    blo, bhi = r
                    if blo <= lo and hi <= bhi:
                        r = (lo, hi)
            self.memo[id(v)] = r
        return r

    def fits(self, op: Operation, depth: int = 0):
        """The exact range of ``op``'s integer result if the op did not wrap, else None."""
        got = self._op(op, depth)
        if got is None:
            return None
        blo, bhi = _bounds(op.results[0].type)
        return got if blo <= got[0] and got[1] <= bhi else None

    def _op(self, op: Operation, depth: int):
        """The mathematical range of ``op``'s result from its operands' ranges (None: unknown)."""
        name = op.name
        if name == "arith.constant":
            c = op.attrs["value"]
            return (int(c), int(c)) if _is_int(op.results[0].type) else None
        if name == "nvvm.sreg":
            return _SREG_RANGES.get(op.attrs["reg"])
        if name == "arith.cmp":
            return 0, 1
        if not op.results or not _is_int(op.results[0].type):
            return None
        if name == "arith.select":
            (alo, ahi), (blo, bhi) = (self.of(x, depth) for x in op.operands[1:])
            return min(alo, blo), max(ahi, bhi)
        if name == "arith.cast":
            src = op.operands[0]
            if src.type.is_bool:
                return 0, 1
            return self.of(src, depth) if _is_int(src.type) else None
        if len(op.operands) != 2:
            return None
        a, b = op.operands
        (alo, ahi), (blo, bhi) = self.of(a, depth), self.of(b, depth)
        if name == "arith.add":
            return alo + blo, ahi + bhi
        if name == "arith.sub":
            return alo - bhi, ahi - blo
        if name in ("arith.mul", "arith.min", "arith.max"):
            f = {"arith.mul": lambda x, y: x * y, "arith.min": min, "arith.max": max}[name]
            corners = [f(x, y) for x in (alo, ahi) for y in (blo, bhi)]
            return min(corners), max(corners)
        k = _constant(b)
        if name == "arith.div" and k is not None and k > 0:
            return int(alo / k) if alo < 0 else alo // k, int(ahi / k) if ahi < 0 else ahi // k
        if name == "arith.rem" and k is not None and k > 0:
            return (0, min(ahi, k - 1)) if alo >= 0 else (-(k - 1), k - 1)
        if name == "arith.and" and (alo >= 0 or blo >= 0):
            return 0, min(h for lo, h in ((alo, ahi), (blo, bhi)) if lo >= 0)
        if name in ("arith.or", "arith.xor") and alo >= 0 and blo >= 0:
            return 0, (1 << max(ahi, bhi).bit_length()) - 1
        if name == "arith.shl" and k is not None and 0 <= k < a.type.bits:
            return alo << k, ahi << k
        if name == "arith.shr" and k is not None and 0 <= k < a.type.bits and alo >= 0:
            return alo >> k, ahi >> k
        return None


def value_range(v: Value) -> tuple:
    """(lo, hi): bounds on the integer value ``v`` takes, from the ops that compute it (the
    type's bounds where nothing is known)."""
    return _Ranges().of(v)


class _Linear:
    """An index's linear form, memoized per value: ``(terms, c)`` with ``terms`` a tuple of
    (value, coefficient) in the order first met, so that ``v == sum(t * k) + c`` exactly."""

    def __init__(self, ranges: _Ranges):
        self.ranges = ranges
        self.memo: dict = {}
        self.sums: dict = {}        # (type, terms as a set) -> the first value that is that sum

    def of(self, v: Value, depth: int = 0) -> tuple:
        got = self.memo.get(id(v))
        if got is None:
            got = self.memo[id(v)] = self._form(v, depth)
            terms, c = got
            if c == 0 and terms and terms != ((v, 1),):
                self.sums.setdefault(_sum_key(v.type, terms), v)
        return got

    def _form(self, v: Value, depth: int) -> tuple:
        c = _constant(v)
        if c is not None:
            return (), int(c)
        op = v.owner
        if (depth < _DEPTH and isinstance(op, Operation)
                and op.name in ("arith.add", "arith.sub", "arith.mul")
                and self.ranges.fits(op, depth) is not None):
            a, b = op.operands
            if op.name == "arith.mul":
                for x, y in ((a, b), (b, a)):
                    k = _constant(y)
                    if k is not None:
                        terms, c = self.of(x, depth + 1)
                        return _scaled(terms, k), c * k
            else:
                sign = -1 if op.name == "arith.sub" else 1
                ta, ca = self.of(a, depth + 1)
                tb, cb = self.of(b, depth + 1)
                return _plus(ta, _scaled(tb, sign)), ca + sign * cb
        return ((v, 1),), 0


def _scaled(terms: tuple, k: int) -> tuple:
    return tuple((t, x * k) for t, x in terms) if k else ()


def _plus(a: tuple, b: tuple) -> tuple:
    out: dict = {}
    values = {}
    for t, x in a + b:
        out[id(t)] = out.get(id(t), 0) + x
        values[id(t)] = t
    return tuple((values[i], x) for i, x in out.items() if x)


def split_address_constants(module: Module) -> int:
    """Rewrite every function's ``ptr.offset`` chains as above; returns how many ``ptr.offset``
    ops changed: now a shared base plus a constant, or dropped for an equal address in scope."""
    ranges = _Ranges()
    state = _State(ranges, _Linear(ranges))
    for fn in module.functions:
        state.block(fn.body.block, {})
    return state.rewritten


class _State:
    def __init__(self, ranges: _Ranges, linear: _Linear):
        self.ranges = ranges
        self.linear = linear
        self.addresses: dict = {}   # id(ptr.offset result) -> (root, links, c), as traced
        self.replaced: dict = {}    # id(result of a dropped op) -> what stands for it
        self.keep: list = []        # the dropped ops (their ids stay unique)
        self.rewritten = 0

    def block(self, block: Block, in_scope: dict) -> None:
        """Rewrite ``block``: ``in_scope`` maps (root, dynamic part) keys to the bases built
        in the enclosing blocks before this region; what this block adds leaves it after."""
        added = []
        out = []
        replaced = self.replaced
        for op in block.ops:
            if op.name == "ptr.offset":
                address = self._address(op)
                self.addresses[id(op.results[0])] = address
            if replaced:
                op.operands = [replaced.get(id(v), v) for v in op.operands]
            for r in op.regions:
                self.block(r.block, in_scope)
            if op.name == "ptr.offset" and self._rewrite(op, address, in_scope, added, out):
                continue
            out.append(op)
        for key in added:
            del in_scope[key]
        block.ops[:] = out

    def _address(self, op: Operation) -> tuple:
        """(root, links, c) of ``op``'s address: ``links`` one dynamic part per chain link that
        has one (its index type, its terms and their ``_sum_key``), ``c`` the constants' sum."""
        p, i = op.operands
        root, links, c = self.addresses.get(id(p)) or (p, (), 0)
        terms, k = self._split(i)
        if terms:
            links = links + ((i.type, terms, _sum_key(i.type, terms)),)
        return root, links, c + k

    def _split(self, i: Value) -> tuple:
        """(terms, c) of index ``i``, if its dynamic part can be built without wrapping in
        ``i``'s type; else ``i`` itself as the one term."""
        terms, c = self.linear.of(i)
        if terms == ((i, 1),) or _sum_fits(self.ranges, terms, i.type):
            return terms, c
        return ((i, 1),), 0

    def _rewrite(self, op: Operation, address: tuple, in_scope: dict, added: list,
                 out: list) -> bool:
        """Make ``op`` ``base + c`` (True: ``op`` is dropped, its result is ``base`` or the
        same address earlier in scope). An address without a constant part is left as it is
        and becomes the base of the addresses in scope that share its dynamic part."""
        self.scope = (in_scope, added)
        root, links, c = address
        p, i = op.operands
        key = _key(root, links)
        if c == 0 and links:
            base = in_scope.get(key)
            if base is None:
                in_scope[key] = op.results[0]
                added.append(key)
                return False
            return self._drop(op, base)
        if not links and p is root:
            return False                        # root + a constant already
        same = in_scope.get(("address", key, c))
        if same is not None:
            return self._drop(op, same)
        base = self._base(out, op, root, links)
        if not c:                               # no links either: the address is the root
            return self._drop(op, base)
        if p is not base or _constant(i) != c:
            op.operands = [base, self._index(out, op, c, i.type)]
            self.rewritten += 1
        in_scope[("address", key, c)] = op.results[0]
        added.append(("address", key, c))
        return False

    def _drop(self, op: Operation, value: Value) -> bool:
        self.replaced[id(op.results[0])] = value
        self.keep.append(op)
        self.rewritten += 1
        return True

    def _base(self, out: list, at: Operation, root: Value, links: tuple) -> Value:
        """``root`` plus the dynamic parts ``links``, one ``ptr.offset`` per link, each prefix
        the one in scope when there is one."""
        if not links:
            return root
        key = _key(root, links)
        in_scope, added = self.scope
        base = in_scope.get(key)
        if base is None:
            t, terms, _ = links[-1]
            prefix = self._base(out, at, root, links[:-1])
            base = self._emit(out, at, "ptr.offset", (prefix, self._sum(out, at, t, terms)),
                              root.type)
            in_scope[key] = base
            added.append(key)
        return base

    def _sum(self, out: list, at: Operation, t, terms: tuple) -> Value:
        """``sum(v * k)`` in type ``t``, as new ops before ``at``, in ``_ordered`` order (in
        range: ``_sum_fits``); one per terms in scope."""
        if len(terms) == 1 and terms[0][1] == 1:
            return terms[0][0]
        key = _sum_key(t, terms)
        found = self.linear.sums.get(key)
        if found is not None and _dominates(found, at):
            return found
        return self._memo(key, lambda: self._build_sum(out, at, t, terms))

    def _build_sum(self, out: list, at: Operation, t, terms: tuple) -> Value:
        total = None
        for v, k in _ordered(terms):
            x = v if abs(k) == 1 else self._emit(out, at, "arith.mul",
                                                 (v, self._constant(out, at, t, abs(k))), t)
            if total is None:
                total = x if k > 0 else self._emit(
                    out, at, "arith.sub", (self._constant(out, at, t, 0), x), t)
            else:
                total = self._emit(out, at, "arith.add" if k > 0 else "arith.sub", (total, x), t)
        return total

    def _memo(self, key, make) -> Value:
        """The value made for ``key`` earlier in scope, else ``make()``, then in scope."""
        in_scope, added = self.scope
        v = in_scope.get(key)
        if v is None:
            v = in_scope[key] = make()
            added.append(key)
        return v

    def _index(self, out: list, at: Operation, c: int, t) -> Value:
        """The constant index ``c``: of type ``t`` where it fits, else i64."""
        from ..ir.types import i64
        lo, hi = _bounds(t)
        return self._constant(out, at, t if lo <= c <= hi else i64, c)

    def _constant(self, out: list, at: Operation, t, c: int) -> Value:
        return self._memo(("constant", t.name, c),
                          lambda: self._emit(out, at, "arith.constant", (), t, {"value": c}))

    @staticmethod
    def _emit(out: list, at: Operation, name: str, operands: tuple, t, attrs=None) -> Value:
        op = Operation(name, operands, (t,), attrs, loc=at.loc)
        op.parent = at.parent
        out.append(op)
        return op.results[0]


def _key(root: Value, links: tuple) -> tuple:
    """What makes two addresses' dynamic parts the same: the root and, per link, the index type
    and the terms (in any order)."""
    return id(root), tuple(link[2] for link in links)


def _sum_key(t, terms: tuple) -> tuple:
    """What makes two sums of terms the same: the type's name and the terms in any order."""
    return "sum", t.name, frozenset((id(v), k) for v, k in terms)


def _dominates(v: Value, at: Operation) -> bool:
    """Whether ``v``, the result of an op met before ``at`` in program order, is defined in
    ``at``'s block or in one enclosing it (then it is in scope at ``at``)."""
    home = v.owner.parent if isinstance(v.owner, Operation) else v.owner
    block = at.parent
    while block is not None:
        if block is home:
            return True
        region = block.parent
        owner = region.parent if region is not None else None
        block = owner.parent if isinstance(owner, Operation) else None
    return False


def _ordered(terms: tuple) -> tuple:
    """The terms with positive coefficients first (each group in the order met)."""
    return tuple(x for x in terms if x[1] > 0) + tuple(x for x in terms if x[1] < 0)


def _sum_fits(ranges: _Ranges, terms: tuple, t) -> bool:
    """Whether ``_State._sum`` of ``terms`` in type ``t`` stays within ``t``'s bounds: every
    constant, product and partial sum."""
    blo, bhi = _bounds(t)
    lo = hi = 0
    for v, k in _ordered(terms):
        vlo, vhi = ranges.of(v)
        m = abs(k)
        if m > bhi or vlo * m < blo or vhi * m > bhi:
            return False
        lo, hi = (lo + vlo * m, hi + vhi * m) if k > 0 else (lo - vhi * m, hi - vlo * m)
        if lo < blo or hi > bhi:
            return False
    return True
