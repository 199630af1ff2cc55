"""The parameter kinds and the binding-time rules of DESIGN §2 as one ordered table
(``table.TABLE``). Each kind is a class (base.Kind) that owns its match rules, key part, ABI
slots, trace, stored form, recompile reasons, explain row and fast-path forms; ``classify``,
``make_binder``, ``kind_of`` (the generated call path) and jit/loaded.py read them. How to add
a kind: docs/architecture.md, "Adding a parameter kind"."""
from .base import RULES, Kind, bind_stored, got_text, param_change
from .composite import CompositeKind, host_parts, skeleton_static_key
from .scalar import ScalarKind
from .static import StaticKind
from .table import KINDS, TABLE, classify, fast_parts, kind_of, make_binder
from .tensor import PointerKind, TensorKind, tensor_key
from .tma import DescriptorKind, TensorMapKind, descriptor_key

__all__ = ["RULES", "TABLE", "KINDS", "Kind", "StaticKind", "ScalarKind", "TensorKind",
           "PointerKind", "TensorMapKind", "DescriptorKind", "CompositeKind", "classify",
           "make_binder", "kind_of", "fast_parts", "bind_stored", "param_change", "got_text",
           "tensor_key", "descriptor_key", "host_parts", "skeleton_static_key"]
