"""core/values.py: ``has_leaves`` gives ``bool(flatten(x)[1])`` for every kind of value the
protocol splits (leaves, value-protocol objects, dataclasses, NamedTuples, tuples, lists, dicts,
static objects, nested any way), and stops at the first leaf."""
import dataclasses
from typing import NamedTuple

from hypothesis import given, settings, strategies as st

from warpstage.core.values import flatten, has_leaves


class Leaf:
    """A stand-in for a dynamic leaf (ws.Int32 and the like need a trace): ``_rewrap`` on the
    class and ``value`` on the instance."""

    def __init__(self):
        self.value = object()

    def _rewrap(self, value):
        new = Leaf()
        new.value = value
        return new


class Proto:
    """A value-protocol object holding ``parts``."""

    def __init__(self, parts):
        self.parts = list(parts)

    def __extract_values__(self):
        return self.parts

    def __new_from_values__(self, values):
        return Proto(values)


@dataclasses.dataclass
class Pair:
    a: object
    b: object


class Named(NamedTuple):
    x: object
    y: object


values = st.recursive(
    st.one_of(st.builds(Leaf), st.integers(), st.floats(allow_nan=False), st.none(),
              st.text(max_size=3)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=2), inner, max_size=3),
        st.builds(Pair, inner, inner), st.builds(Named, inner, inner),
        st.lists(inner, max_size=3).map(Proto)),
    max_leaves=12)


@settings(max_examples=100, deadline=None)
@given(values)
def test_has_leaves_is_whether_flatten_finds_a_leaf(x):
    assert has_leaves(x) == bool(flatten(x)[1])


def test_has_leaves_stops_at_the_first_leaf():
    class Exploding:
        def __extract_values__(self):
            raise AssertionError("walked past the first leaf")

        def __new_from_values__(self, values):
            return self

    assert has_leaves([Leaf(), Exploding()])
    assert has_leaves(Pair(Proto([1, Leaf()]), Exploding()))
    assert not has_leaves([1, (2.0, None), {"k": Named("s", [])}, Proto([])])
