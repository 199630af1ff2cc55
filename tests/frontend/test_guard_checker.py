"""guards.guard_checker (the op plans' per-call guard check): the same answer as guards_hold on
the identity fast path and on the full check, for globals, frozen defaults and a mutable global
changed in place."""
import types

from warpstage.frontend import guards as G


def _namespace():
    ns = {"N": 3, "T": (1, (2, "x")), "L": [1.0, 2.0], "M": types, "F": len}

    def fn(a, b=(0, ())):
        return a
    return ns, fn


def _guards(ns, fn):
    out = [(ns, name, ns[name], G._key(ns[name]), G.GLOBAL) for name in ns]
    return out + G.defaults_guards(fn)


def test_unchanged_guards_hold_and_each_change_fails_as_guards_hold_says():
    ns, fn = _namespace()
    guards = _guards(ns, fn)
    check = G.guard_checker(guards)
    assert check() and G.guards_hold(guards)
    changes = [("N", 4), ("N", True), ("T", (1, (2, "y"))), ("M", G), ("F", abs)]
    for name, value in changes:
        old = ns[name]
        ns[name] = value
        assert not check() and not G.guards_hold(guards), name
        ns[name] = old
        assert check(), name
    del ns["N"]                                         # a deleted global
    assert not check()
    ns["N"] = 3
    ns["L"][1] = 9.0                                    # a list changed in place: the full check
    assert not check() and not G.guards_hold(guards)
    ns["L"][1] = 2.0
    assert check()


def test_a_replaced_default_or_code_fails():
    ns, fn = _namespace()
    guards = _guards(ns, fn)
    check = G.guard_checker(guards)
    fn.__defaults__ = (0, ())               # another tuple: the full check decides, as before
    assert check() is G.guards_hold(guards)
    fn.__defaults__ = (1, ())
    assert not check()
    ns, fn = _namespace()
    check = G.guard_checker(_guards(ns, fn))
    fn.__code__ = (lambda a, b=(0, ()): a + 1).__code__
    assert not check()


def test_a_jit_function_global_is_checked_by_its_key():
    import warpstage as ws

    def helper(x, k=2):
        return x * k
    j = ws.jit(helper)
    ns = {"helper": j}
    guards = [(ns, "helper", j, G._key(j), G.GLOBAL)]
    check = G.guard_checker(guards)
    assert check()
    helper.__defaults__ = (3,)                  # its key changes: the kernel must recompile
    assert not check() and not G.guards_hold(guards)
    helper.__defaults__ = (2,)
    assert check() is G.guards_hold(guards)
    ns["helper"] = ws.jit(helper)               # another object
    assert check() is G.guards_hold(guards)
