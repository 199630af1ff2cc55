"""``raised(exc, path, marker, call, *words)``: the check every misuse test makes of an error a
user meets. ``call()`` raises ``exc``; its message names the line of ``path`` that holds the
comment ``# <marker>``, holds each of ``words``, ends with a ``Fix:`` line; and its traceback
has no frame of warpstage (nor of code ``dataclasses`` generated for warpstage's classes)."""
import traceback

import pytest

import source_lines


def raised(exc, path: str, marker: str, call, *words) -> str:
    with pytest.raises(exc) as ei:
        call()
    msg = str(ei.value)
    assert f"line {source_lines.line_of(path, '# ' + marker)}\n" in msg, msg
    for w in words:
        assert w in msg, msg
    assert msg.splitlines()[-1].startswith("Fix: "), msg
    frames = traceback.extract_tb(ei.value.__traceback__)
    assert not any("/warpstage/" in f.filename or f.filename == "<string>" for f in frames), \
        [f.filename for f in frames]
    return msg
