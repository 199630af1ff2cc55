"""Work run beside a compile's waits (warpstage/jit/pipeline.py ``beside``): a cold compile that
is stored prints its IR text in a thread while LLVM's C code runs (no GIL), and the text stored
is the one the printer gives; an error in such work is dropped, and its reader computes it again
and raises."""
import threading

import pytest

import warpstage as ws
from warpstage import ir
from warpstage.jit import pipeline
from warpstage.jit.cache import persist


def _compile():
    """A cold compile of a new kernel (each test its own: no memory-cache hit)."""
    @ws.kernel
    def scale(x: ws.Tensor, out: ws.Tensor, n: ws.Int32):
        i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
        if i < n:
            out[i] = x[i] * 2.0
    T = ws.Tensor[ws.Float32, 1]
    return ws.compile(scale, T, T, ws.Int32)


def test_beside_runs_the_work_in_another_thread_before_the_body_ends():
    seen = []
    with pipeline.beside([lambda: seen.append(threading.current_thread())]):
        pass
    assert len(seen) == 1 and seen[0] is not threading.current_thread()


def test_an_error_in_the_work_is_dropped_and_the_rest_runs():
    seen = []

    def bad():
        raise ValueError("boom")
    with pipeline.beside([bad, lambda: seen.append(1)]):
        pass
    assert seen == [1]


def test_a_stored_cold_compile_prints_its_ir_beside_llvm(monkeypatch):
    threads, real = [], ir.print_module

    def printing(module, **kwargs):
        if not kwargs:          # (conftest's round-trip check prints with locations=True)
            threads.append(threading.current_thread())
        return real(module, **kwargs)
    monkeypatch.setattr(ir, "print_module", printing)
    ck = _compile()
    assert len(threads) == 1 and threads[0] is not threading.main_thread()
    assert ck.ir == real(ck.module)          # printed once: the cached text is the printer's
    assert len(threads) == 1
    assert ck._beside == []


def test_a_failing_printer_beside_llvm_raises_where_the_text_is_read(monkeypatch):
    calls, real = [], ir.print_module

    def failing(module, **kwargs):
        if kwargs:              # conftest's round-trip check
            return real(module, **kwargs)
        calls.append(threading.current_thread())
        raise RuntimeError("printer broke")
    monkeypatch.setattr(ir, "print_module", failing)
    with pytest.raises(RuntimeError, match="printer broke"):
        _compile()
    # once beside LLVM (dropped), then again by the entry's writer, which raised
    assert len(calls) == 2 and calls[0] is not threading.main_thread()
    assert calls[1] is threading.main_thread()


def test_the_stored_entry_holds_the_printed_ir(monkeypatch):
    stored = []
    monkeypatch.setattr(persist.cache, "put",
                        lambda key, entry, *rest: stored.append(entry) or True)
    ck = _compile()
    # the kernel's entry (on a GPU machine the C call path's launch stub is stored beside it)
    kernel_entries = [e for e in stored if "ir" in e]
    assert len(kernel_entries) == 1 and kernel_entries[0]["ir"] == ir.print_module(ck.module)
    assert ck._beside == []
