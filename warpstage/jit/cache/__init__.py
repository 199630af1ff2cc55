"""The caches of compiled specializations: the disk cache (``persist.py``: keys and
entries; ``files.py``: the cache folder; ``entry_check.py``: validating a stored entry)
and the in-memory one (``memory.py``)."""
