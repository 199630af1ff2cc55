"""warpstage's IR: typed SSA with structured control flow. Imports nothing of the package."""
from .builder import Builder
from .core import Block, Function, Location, Module, Operation, Region, Value
from .opdef import OPS, OpDef, Trait, define, op_def, ops_with
from . import ops as _core_ops  # noqa: F401  (the core ops; helpers the families use)
from .parser import IRParseError, parse
from .printer import print_function, print_module
from .types import (PointerType, ScalarType, Type, bf16, e4m3, e5m2, f16, f32, f64, i1, i8, i16,
                    i32, i64, u8, u16, u32, u64, SCALAR_TYPES)
from .verifier import VerificationError, verify


def _define_families() -> None:
    """Import every ``ir/ops_*.py`` family: each defines its ops (``define``) at import."""
    import importlib
    import pkgutil
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("ops_"):
            importlib.import_module(f"{__name__}.{info.name}")


_define_families()

__all__ = ["Builder", "Block", "Function", "Location", "Module", "Operation", "Region", "Value",
           "IRParseError", "parse", "OPS", "OpDef", "Trait", "define", "op_def", "ops_with",
           "print_function", "print_module", "PointerType", "ScalarType", "Type", "bf16", "f16",
           "f32", "f64", "e4m3", "e5m2", "i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
           "SCALAR_TYPES", "VerificationError", "verify"]
