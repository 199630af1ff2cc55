"""The scalar kind: one dynamic number in one ABI slot. Rule 2 when annotated (``ws.Int32``,
``ws.Float32``, ...; a host ``ws.Int32(5)`` too), rule 3 for a bare ``bool`` / ``int`` /
``float`` (``Boolean``; ``Int32``, or ``Int64`` when it does not fit; ``Float32``) or numpy
scalar (its own dtype). Key part ``("scalar", ir type name)``."""
from __future__ import annotations

import enum

from ... import ir
from ...core.trace import Origin
from ...errors import ArgumentError
from ...ir.types import SCALAR_TYPES
from ...lang.scalars import (DTYPES, Boolean, Float32, HostScalar, Int32, Int64, Scalar,
                             TypePlaceholder, fits)
from .base import RULES, Kind, got_text, mismatch, never_binds
from .static import ann_name

__all__ = ["ScalarKind", "range_of", "check_float_range", "F32_MAX", "INF"]

F32_MAX, INF = 3.4028234663852886e38, float("inf")
_I32_KEY, _I64_KEY, _F32_KEY, _BOOL_KEY = (("scalar", "i32"), ("scalar", "i64"),
                                           ("scalar", "f32"), ("scalar", "i1"))
_NP_SCALARS = {"bool": Boolean, "int8": DTYPES[ir.i8], "int16": DTYPES[ir.i16], "int32": Int32,
               "int64": Int64, "uint8": DTYPES[ir.u8], "uint16": DTYPES[ir.u16],
               "uint32": DTYPES[ir.u32], "uint64": DTYPES[ir.u64], "float16": DTYPES[ir.f16],
               "float32": Float32, "float64": DTYPES[ir.f64], "bfloat16": DTYPES[ir.bf16],
               "float8_e4m3fn": DTYPES[ir.e4m3], "float8_e5m2": DTYPES[ir.e5m2]}
_FLOAT_MAX = {8: float("inf"), 16: 65504.0, 32: F32_MAX, 64: float("inf")}
"""Finite values beyond these overflow to inf (an error); the 8-bit floats saturate instead."""


def range_of(t):
    """(lo, hi) of the values a parameter of scalar type ``t`` takes without an error (floats:
    the finite range, with inf and nan let through)."""
    if t.is_float:
        return ((-float("inf"), float("inf")) if t.bits in (8, 64) else   # fp8: saturates
                (-65504.0, 65504.0) if t.bits == 16 and t.name == "f16" else (-F32_MAX, F32_MAX))
    if t.is_bool:
        return (0, 1)
    if t.is_signed:
        return (-2 ** (t.bits - 1), 2 ** (t.bits - 1) - 1)
    return (0, 2 ** t.bits - 1)


def is_np_generic(value) -> bool:
    np = __import__("sys").modules.get("numpy")
    return np is not None and isinstance(value, np.generic)


def check_float_range(v: float, dtype, name: str) -> None:
    """A finite float that becomes inf in ``dtype`` is an error, like an int overflow."""
    t = dtype.ir_type
    limit = _FLOAT_MAX[32] if t.name == "bf16" else _FLOAT_MAX[t.bits]   # bf16 has f32's range
    if v == v and abs(v) != float("inf") and abs(v) > limit:
        raise ArgumentError(f"parameter '{name}': the float {v!r} overflows {dtype.__name__} "
                            f"(largest finite value {limit:g}).\nFix: annotate the parameter "
                            "ws.Float64, or scale the value.")


_PYTHON_NUMBERS = (int, float, bool)
_ACCEPTS = {int: int, float: (int, float), bool: bool}
_NP_KINDS = {int: "iub", float: "iubf", bool: "b"}
_EXPECTS = {int: "an int (a bool or a numpy integer also is one)",
            float: "a float or an int (or a numpy number)", bool: "a bool (or np.bool_)"}
_FIXES = {int: "pass an int (int(x) truncates a float toward zero), or annotate the parameter "
               "float (or ws.Float32) if it holds fractions",
          float: "pass a Python number, or annotate the parameter with the type you mean",
          bool: "pass True or False (bool(x)), or annotate the parameter int"}


def _is_scalar_annotation(ann) -> bool:
    return isinstance(ann, type) and issubclass(ann, Scalar) and ann.ir_type is not None


def _check_annotated(value, dtype, name) -> None:
    """Raise unless ``value`` is a valid host value for a parameter annotated ``dtype``."""
    t = dtype.ir_type
    if isinstance(value, TypePlaceholder) and value.dtype is not dtype:
        raise ArgumentError(f"parameter '{name}' is annotated {ann_name(dtype)} but got "
                            f"{got_text(value)}.\nFix: pass {ann_name(dtype)}, or change the "
                            "annotation.")
    v = value.value if isinstance(value, HostScalar) else value
    if isinstance(v, bool) or isinstance(v, int):
        if t.is_int and not fits(t, int(v)):
            raise ArgumentError(f"parameter '{name}' is annotated {dtype.__name__} but the int "
                                f"{v} overflows it.\nFix: pass a value in range, or annotate a wider "
                                "type (ws.Int64).")
        return
    if is_np_generic(v):
        return _check_annotated(v.item(), dtype, name)
    if isinstance(v, float):
        if not t.is_float:
            raise ArgumentError(f"parameter '{name}' is annotated {dtype.__name__} but got the "
                                f"float {v}.\nFix: pass an int, or annotate ws.Float32.")
        if t.bits < 64:
            check_float_range(v, dtype, name)
        return
    kind = "a bool" if t.bits == 1 else ("a float (or an int)" if t.is_float else "an int")
    as_type = (getattr(type(v), "placeholder_of", None) is not None
               or any(v is x for x in (int, float, bool)))
    raise ArgumentError(f"parameter '{name}' is annotated {dtype.__name__} but got "
                        f"{got_text(v)}.\nFix: pass {kind}"
                        + (f"; in ws.compile, the type ws.{dtype.__name__} (not the Python "
                           f"type)" if as_type else "") + ".")


class ScalarKind(Kind):
    """A dynamic scalar parameter of one dtype."""

    STORED_TAG = "scalar"
    FAST_TAG = "scalar"

    def __init__(self, dtype, rule: int):
        self.dtype = dtype
        self.rule = rule
        self.binding = "dynamic"
        self.desc = dtype.__name__
        self.key = ("scalar", dtype.ir_type.name)

    def abi(self, name):
        return [(name, self.dtype.ir_type)]

    def host_leaves(self, value, out):
        if isinstance(value, HostScalar):
            value = value.value
        out.append(value.item() if hasattr(value, "item") else value)

    def make(self, it, name):
        return self.dtype._wrap(next(it), Origin(f"parameter '{name}' ({self.desc}, rule {self.rule}: "
                                                 f"{RULES[self.rule]})"))

    # -- match rules ----------------------------------------------------------------------------
    @classmethod
    def match_annotated(cls, value, ann, ctx):
        """Rule 2: annotated with a scalar type; the value is range-checked."""
        if not _is_scalar_annotation(ann):
            return None
        _check_annotated(value, ann, ctx.name)
        return cls(ann, 2)

    @classmethod
    def match_host_scalar(cls, value, ann, ctx):
        """Rule 2: a host ``ws.Int32(5)``, its type given by the value."""
        return cls(value.dtype, 2) if isinstance(value, HostScalar) else None

    @classmethod
    def match_bare(cls, value, ann, ctx):
        """Rule 3: a bare bool / int / float, or a numpy scalar (its own dtype)."""
        name = ctx.name
        if is_np_generic(value):
            dtype = _NP_SCALARS.get(value.dtype.name)
            if dtype is None:
                raise ArgumentError(f"parameter '{name}': numpy scalar of dtype {value.dtype.name} "
                                    "is not a warpstage dtype.\nFix: convert it, e.g. int(x) or "
                                    "float(x).")
            return cls(dtype, 3)
        if isinstance(value, bool):
            return cls(Boolean, 3)
        if isinstance(value, int):
            if not fits(ir.i64, value):
                raise ArgumentError(f"parameter '{name}': the int {value} does not fit in 64 bits."
                                    "\nFix: pass a smaller value, or make it static with "
                                    "ws.Static[int].")
            return cls(Int32 if fits(ir.i32, value) else Int64, 3)
        if isinstance(value, float):
            check_float_range(value, Float32, name)
            return cls(Float32, 3)
        return None

    @classmethod
    def match_python_annotated(cls, value, ann, ctx):
        """Rule 3 for a parameter annotated with Python's own ``int``, ``float`` or ``bool``: the
        value must be one (PEP 484's numeric tower: a bool is an int, an int a float; a numpy
        scalar of that kind too), else ArgumentError at the call. ``int`` binds as rule 3 does
        (``Int32``, or ``Int64`` when it does not fit; a numpy int keeps its dtype), ``float``
        as ``Float32`` (a numpy float keeps its dtype), ``bool`` as ``Boolean``."""
        if ann not in _PYTHON_NUMBERS:
            return None
        if isinstance(value, TypePlaceholder):         # ws.compile(k, ..., ws.Int32)
            t = value.dtype.ir_type
            if (t.is_bool and ann is not float) or (t.is_int and ann is not bool) or \
                    (t.is_float and ann is float):
                return cls(value.dtype, 3)
        np_kind = value.dtype.kind if is_np_generic(value) else None
        v = value.value if isinstance(value, HostScalar) else value
        ok = (np_kind in _NP_KINDS[ann] if np_kind is not None else
              isinstance(v, _ACCEPTS[ann]) and not (ann is float and isinstance(v, bool)))
        if not ok or isinstance(value, (HostScalar, enum.Enum)):
            what = (got_text(value) if isinstance(value, TypePlaceholder) else
                    f"the {type(v).__name__} {v!r}" if isinstance(v, (int, float)) else got_text(v))
            raise ArgumentError(
                f"parameter '{ctx.name}' is annotated {ann.__name__} but got {what}.\n"
                f"Expected: {_EXPECTS[ann]}; got {type(value).__name__}.\nFix: {_FIXES[ann]}.")
        if np_kind is not None:
            return cls.match_bare(value, None, ctx)
        if ann is float:
            check_float_range(float(v), Float32, ctx.name)
            return cls(Float32, 3)
        if ann is int and isinstance(v, bool):
            return cls(Int32, 3)
        return cls.match_bare(v, None, ctx)

    # -- disk -----------------------------------------------------------------------------------
    def stored(self):
        return {"k": "scalar", "type": self.dtype.ir_type.name}

    @classmethod
    def bind_stored(cls, d, value, name, out):
        type_name = d["type"]
        t = SCALAR_TYPES[type_name]
        v = value.value if isinstance(value, HostScalar) else value
        if type(v).__module__ == "numpy" and getattr(v, "ndim", 1) == 0:
            v = v.item()
        if isinstance(v, enum.Enum):                # static by rule 7, even an IntEnum member
            raise mismatch(name, f"a scalar of type {type_name}",
                           f"the enum member {v!r}, which is static (rule 7)")
        ok = (isinstance(v, (bool, int)) if not t.is_float else
              isinstance(v, (int, float)) and not isinstance(v, bool))
        if not ok:
            raise mismatch(name, f"a scalar of type {type_name}", f"{type(v).__name__} {v!r}"[:60])
        if t.is_int or t.is_bool:
            if not fits(t, int(v)):
                raise mismatch(name, f"a scalar of type {type_name}", f"{v}, which does not fit")
            out.append(int(v))
        else:
            out.append(float(v))

    def change(self, new):
        return f"{self.dtype.__name__} -> {new.dtype.__name__}"

    # -- the fast paths -------------------------------------------------------------------------
    @classmethod
    def fast_kind(cls, annotation, self_rule):
        """('scalar', lo, hi, is_float): what ``bind_scalar`` accepts."""
        if not _is_scalar_annotation(annotation):
            return None
        return ("scalar", *range_of(annotation.ir_type), annotation.ir_type.is_float)

    @classmethod
    def binder(cls, annotation, self_rule, adapter):
        if annotation in _PYTHON_NUMBERS and not self_rule:
            return _PYTHON_BINDERS[annotation]
        if isinstance(annotation, type) and issubclass(annotation, Scalar) and \
                annotation.ir_type is None:
            return never_binds                 # an abstract scalar type: the full path explains
        if not _is_scalar_annotation(annotation):
            return None
        key = ("scalar", annotation.ir_type.name)
        lo, hi = range_of(annotation.ir_type)
        is_float = annotation.ir_type.is_float

        def bind_scalar(v, keys, leaves):
            t = type(v)
            if t is HostScalar:
                if v.dtype is not annotation:
                    return False
                v = v.value
            elif t is not int and t is not float and t is not bool:
                return False                   # numpy scalars etc.: checked on the full path
            elif t is float and not is_float:
                return False                   # a float for an int parameter: the full path explains
            if not lo <= v <= hi:
                return False                   # out of range: the full path explains it
            keys.append(key)
            leaves.append(v)
            return True
        return bind_scalar

    @staticmethod
    def bind_int(v, keys, leaves):
        if -2147483648 <= v <= 2147483647:
            keys.append(_I32_KEY)
        elif -9223372036854775808 <= v <= 9223372036854775807:
            keys.append(_I64_KEY)
        else:
            return False                       # beyond 64 bits: the full path explains it
        leaves.append(v)
        return True

    @staticmethod
    def bind_float(v, keys, leaves):
        if not -F32_MAX <= v <= F32_MAX and v == v and v not in (INF, -INF):
            return False                       # overflows Float32: the full path explains it
        keys.append(_F32_KEY)
        leaves.append(v)
        return True

    @staticmethod
    def bind_bool(v, keys, leaves):
        keys.append(_BOOL_KEY)
        leaves.append(v)
        return True

    @staticmethod
    def bind_host(v, keys, leaves):
        keys.append(("scalar", v.dtype.ir_type.name))      # rule 2: the type it is tagged with
        value = v.value
        leaves.append(value.item() if hasattr(value, "item") else value)
        return True

    @staticmethod
    def bind_fallback(v, keys, leaves):
        """A numpy scalar (rule 3 with its own dtype) takes the full path."""
        return False if type(v).__module__ == "numpy" else None

    AUTO_TYPES = {int: "bind_int", float: "bind_float", bool: "bind_bool", HostScalar: "bind_host"}

    FAST = '''\
    t{i} = type({v})
    if ({not_number}) or not _lo{i} <= {v} <= _hi{i}:
        {miss}
'''
    AUTO = (("t{i} is int", '''\
        if -2147483648 <= {v} <= 2147483647:
            g{i} = 0
        elif -9223372036854775808 <= {v} <= 9223372036854775807:
            g{i} = 1
        else:
            {miss}
        c{i} = ({v},)
        e{i} = None
'''), ("t{i} is float", '''\
        if not -_F32_MAX <= {v} <= _F32_MAX and {v} == {v} and {v} not in (_INF, -_INF):
            {miss}
        g{i} = 2
        c{i} = ({v},)
        e{i} = None
'''), ("t{i} is bool", '''\
        g{i} = 3
        c{i} = ({v},)
        e{i} = None
'''))

    @classmethod
    def fast_parts(cls, i, v, kind):
        types = ("int", "float", "bool") if kind[3] else ("int", "bool")
        return {"read": cls.FAST.format(v=v, i=i, miss="{miss}", not_number=" and ".join(
                    f"t{i} is not {t}" for t in types)),
                "leaves": v,                    # the key part is the annotation's
                "namespace": {f"_lo{i}": kind[1], f"_hi{i}": kind[2]}}


def _bind_annotated_int(v, keys, leaves):
    """``n: int``: an int binds as rule 3 does; anything else takes the full path (which
    checks it: a float is an error there, a bool an Int32, a numpy int its own dtype)."""
    return ScalarKind.bind_int(v, keys, leaves) if type(v) is int else False


def _bind_annotated_float(v, keys, leaves):
    """``x: float``: a float or an int binds as Float32."""
    t = type(v)
    return ScalarKind.bind_float(float(v), keys, leaves) if t is float or t is int else False


def _bind_annotated_bool(v, keys, leaves):
    return ScalarKind.bind_bool(v, keys, leaves) if type(v) is bool else False


_PYTHON_BINDERS = {int: _bind_annotated_int, float: _bind_annotated_float,
                   bool: _bind_annotated_bool}
