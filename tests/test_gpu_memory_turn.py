"""conftest's turn for big_gpu_memory tests: one at a time over processes (an flock)."""
import threading
import time

import pytest

from gpu_memory import big_gpu_memory_turn


def test_a_second_holder_waits_for_the_first(tmp_path):
    path = tmp_path / "turn.lock"
    order, inside = [], threading.Event()

    def second():
        with big_gpu_memory_turn(path):         # its own open file: flock excludes it
            order.append("second in")

    with big_gpu_memory_turn(path):
        order.append("first in")
        t = threading.Thread(target=second)
        t.start()
        time.sleep(0.3)
        order.append("first out")
    t.join(10)
    assert order == ["first in", "first out", "second in"]


@pytest.mark.big_gpu_memory
def test_a_marked_test_runs_inside_its_turn(tmp_path_factory):
    lock = tmp_path_factory.getbasetemp().parent / "big_gpu_memory.lock"
    assert lock.exists()
