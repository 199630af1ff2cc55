"""``line_of(path, marker)``: the line number of the source line of ``path`` holding ``marker``
(a comment such as ``# marker: bad config``), for tests that check an error names the user's
line. A line that mentions ``line_of(`` itself is skipped (the assertion naming the marker)."""


def line_of(path: str, marker: str) -> int:
    with open(path, encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            if marker in text and "line_of(" not in text:
                return n
    raise AssertionError(f"no line of {path} holds {marker!r}")
