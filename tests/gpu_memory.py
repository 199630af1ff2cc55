"""The turn that conftest gives tests marked big_gpu_memory (a module of its own so tests can
import it: several folders have a conftest.py)."""
import contextlib


@contextlib.contextmanager
def big_gpu_memory_turn(path):
    """Hold an exclusive ``fcntl.flock`` on ``path`` (made if missing) while the block runs."""
    import fcntl
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
