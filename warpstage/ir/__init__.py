"""warpstage's IR: typed SSA with structured control flow. Imports nothing of the package."""
from .builder import Builder
from .core import Block, Function, Location, Module, Operation, Region, Value
from .ops import OPS
from .printer import print_function, print_module
from .types import (PointerType, ScalarType, Type, bf16, f16, f32, f64, i1, i8, i16, i32, i64,
                    u8, u16, u32, u64, SCALAR_TYPES)
from .verifier import VerificationError, verify

__all__ = ["Builder", "Block", "Function", "Location", "Module", "Operation", "Region", "Value",
           "OPS", "print_function", "print_module", "PointerType", "ScalarType", "Type", "bf16",
           "f16", "f32", "f64", "i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
           "SCALAR_TYPES", "VerificationError", "verify"]
