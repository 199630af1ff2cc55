"""Test helper: import a file of this repository by its path, e.g. ``load_example("softmax")``
runs examples/softmax.py. (tests/ is on sys.path because tests/conftest.py lives there, so any
test file can ``from example_loader import load_example``.)

Every call executes the file afresh into a new module object that is not entered in
sys.modules: its kernels, and their specialization caches, belong to the caller alone, and a
test that loads inside its body gets a fresh copy each time. ``module_name`` becomes the
module's ``__name__`` (the ``__module__`` that static keys and the disk cache record): callers
pass a name of their own (``sim_ex_*``, ``gpu_ex_*``, ``races_*``) where a copy should not share
the default ``ex_<name>`` with another test file's."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the repository root


def load_file(path, module_name: str):
    """The Python file at ``path`` (absolute, or relative to ROOT; str or os.PathLike),
    executed as a new module named ``module_name``."""
    spec = importlib.util.spec_from_file_location(module_name, os.path.join(ROOT, path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_example(name: str, module_name: str | None = None):
    """examples/<name>.py as a new module named ``module_name`` (default ``ex_<name>``)."""
    return load_file(os.path.join("examples", f"{name}.py"), module_name or f"ex_{name}")
