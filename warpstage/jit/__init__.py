"""The jit room (DESIGN §3): ``Kernel`` / ``JitFunction`` objects, the compile stages
(``stages.py``: Traced -> Lowered -> Compiled, made by ``pipeline.py``), launching
(``launch*.py``, ``fast_call.py``, ``prepared.py``, ``loaded.py``), ``explain`` and the
caches (``cache/``). Imports the rooms below it; nothing below imports it."""
