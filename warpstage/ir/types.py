"""IR types: scalars, pointers and TMA tensor maps.

Types are frozen and hashable; equality is structural, so they can be used as dict keys and
compared with ``==``. The textual spelling (``str(t)``) is what the printer writes.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "Type", "ScalarType", "PointerType", "TensorMapType", "tensormap", "i1", "i8", "i16", "i32",
    "i64", "u8", "u16", "u32",
    "u64", "f16", "bf16", "f32", "f64", "e4m3", "e5m2", "ADDRESS_SPACES", "SCALAR_TYPES", "parse_type",
]


class Type:
    """Base class of IR types."""


@dataclass(frozen=True)
class ScalarType(Type):
    """A scalar: ``kind`` is 'bool', 'int' (signed), 'uint' or 'float'; ``bits`` its width.

    ``name`` is the spelling (i32, u8, f16, bf16, ...). bf16 and f16 are both 16-bit floats and
    differ only by name; so do the 8-bit floats e4m3 and e5m2 (OCP FP8, ``ir.fp8``), which are
    storage types: loads, stores, casts, select and wgmma take them, arithmetic does not.
    """

    kind: str
    bits: int
    name: str

    # Compared and hashed for every op built, verified and merged: the identity test first
    # (the types in use are the module constants below), and a hash of the spelling alone.
    def __eq__(self, other) -> bool:
        return self is other or (other.__class__ is self.__class__ and self.name == other.name
                                 and self.kind == other.kind and self.bits == other.bits)

    def __hash__(self) -> int:
        return hash(self.name)

    def __str__(self) -> str:
        return self.name

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        """True for signed and unsigned integers (not bool)."""
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self.kind == "int"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def nbytes(self) -> int:
        return max(1, self.bits // 8)


ADDRESS_SPACES = ("generic", "global", "shared", "const", "local")


@dataclass(frozen=True)
class PointerType(Type):
    """A typed pointer into an address space (PTX state space): generic, global, shared, ..."""

    pointee: ScalarType
    space: str = "global"

    def __eq__(self, other) -> bool:
        return self is other or (other.__class__ is self.__class__ and self.space == other.space
                                 and self.pointee == other.pointee)

    def __hash__(self) -> int:
        return hash((self.pointee.name, self.space))

    def __str__(self) -> str:
        return f"!ptr<{self.pointee}, {self.space}>"


@dataclass(frozen=True)
class TensorMapType(Type):
    """``!tensormap``: a TMA tensor map (CUDA ``CUtensorMap``), an opaque 128-byte, 64-byte
    aligned descriptor of a global tensor's address, sizes, strides, box and swizzle. A kernel
    receives it by value as a grid-constant parameter (PTX ``.param .align 64 .b8 p[128]``);
    as an SSA value it stands for that descriptor's generic address, which is what TMA
    instructions (``cp.async.bulk.tensor``, ``prefetch.tensormap``) take."""

    def __str__(self) -> str:
        return "!tensormap"


tensormap = TensorMapType()

i1 = ScalarType("bool", 1, "i1")
i8 = ScalarType("int", 8, "i8")
i16 = ScalarType("int", 16, "i16")
i32 = ScalarType("int", 32, "i32")
i64 = ScalarType("int", 64, "i64")
u8 = ScalarType("uint", 8, "u8")
u16 = ScalarType("uint", 16, "u16")
u32 = ScalarType("uint", 32, "u32")
u64 = ScalarType("uint", 64, "u64")
f16 = ScalarType("float", 16, "f16")
bf16 = ScalarType("float", 16, "bf16")
f32 = ScalarType("float", 32, "f32")
f64 = ScalarType("float", 64, "f64")
e4m3 = ScalarType("float", 8, "e4m3")
e5m2 = ScalarType("float", 8, "e5m2")

SCALAR_TYPES = {t.name: t for t in (i1, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64,
                                    e4m3, e5m2)}


def parse_type(text: str) -> Type:
    """The type spelled ``text`` (the inverse of ``str(t)``): 'f32', '!ptr<bf16, shared>'.

    Raises ValueError naming the text for anything else.
    """
    t = SCALAR_TYPES.get(text)
    if t is not None:
        return t
    if text == "!tensormap":
        return tensormap
    if text.startswith("!ptr<") and text.endswith(">"):
        pointee, _, space = text[5:-1].partition(",")
        pointee, space = pointee.strip(), space.strip()
        if pointee in SCALAR_TYPES and space in ADDRESS_SPACES:
            return PointerType(SCALAR_TYPES[pointee], space)
    raise ValueError(f"not an IR type: {text!r}; expected a scalar name "
                     f"({', '.join(SCALAR_TYPES)}), '!ptr<scalar, space>' with space one of "
                     f"{', '.join(ADDRESS_SPACES)}, or '!tensormap'")
