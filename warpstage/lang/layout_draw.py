"""Pictures of layouts: ``print_layout`` (plain text) and ``draw`` (a PNG with matplotlib, like
CuTe's ``print_latex``: a grid of the layout's 2-D domain, each cell labelled with its index,
or, with a thread-value layout, coloured by thread and labelled ``T<thread>V<value>``).

matplotlib is optional (``pip install warpstage[draw]``); ``draw`` without it raises
``ImportError`` naming the extra.
"""
from __future__ import annotations

from .layout_core import as_layout, get, idx2crd
from .layout_int import is_static, product, tuple_repr
from .operands import operand_error

__all__ = ["print_layout", "layout_table", "draw"]


def _grid(layout):
    """(rows, cols, cell(r, c) -> index) of a static layout of rank 1 or 2."""
    layout = _layout_of(layout)
    shape_of = getattr(layout, "outer", layout)       # a swizzled layout: its outer layout's
    if shape_of.rank() > 2:
        raise operand_error("ws.layout.print_layout/draw", layout, "a layout of rank 1 or 2",
                            "group modes first (ws.layout.group) or select two")
    if not is_static(product(layout.shape)):
        raise operand_error("ws.layout.print_layout/draw", layout, "a static layout",
                            "draw a layout with static shape and stride")
    if layout.rank() == 1 and not isinstance(layout.shape, tuple):
        rows, cols = 1, layout.size()
        return rows, cols, lambda r, c: layout(c)
    if layout.rank() == 1:
        rows, cols = 1, layout.size()
        return rows, cols, lambda r, c: layout((c,))
    rows, cols = product(get(shape_of, 0).shape), product(get(shape_of, 1).shape)
    return rows, cols, lambda r, c: layout(r, c)


def _layout_of(x):
    return x if callable(x) and hasattr(x, "shape") and not hasattr(x, "engine") else \
        as_layout(getattr(x, "layout", x), "ws.layout.draw's layout")


def layout_table(layout) -> str:
    """The text grid of ``print_layout``."""
    rows, cols, cell = _grid(layout)
    cells = [[str(cell(r, c)) for c in range(cols)] for r in range(rows)]
    w = max(len(x) for row in cells for x in row) + 1
    w = max(w, len(str(cols - 1)) + 1)
    head = " " * (len(str(rows - 1)) + 3) + "".join(str(c).rjust(w) for c in range(cols))
    sep = " " * (len(str(rows - 1)) + 2) + "+" + "-" * (w * cols)
    lines = [head, sep]
    for r in range(rows):
        lines.append(f"{str(r).rjust(len(str(rows - 1)))}  |" + "".join(x.rjust(w) for x in cells[r]))
    return "\n".join(lines)


def print_layout(layout) -> None:
    """Print ``layout`` (static, rank 1 or 2) as ``shape:stride`` and a grid of its indices
    (rows: mode 0, columns: mode 1), like CuTe's ``print_layout``."""
    print(f"{tuple_repr(_layout_of(layout).shape)}:{tuple_repr(_layout_of(layout).stride)}"
          if not hasattr(_layout_of(layout), "inner") else repr(_layout_of(layout)))
    print(layout_table(layout))


def _tv_cells(tv, rows, cols):
    """{(row, col): (thread, value)} of a TV layout over a rows x cols tile."""
    tv = as_layout(tv, "ws.layout.draw's tv_layout")
    nt, nv = product(get(tv, 0).shape), product(get(tv, 1).shape)
    out = {}
    for t in range(nt):
        for v in range(nv):
            r, c = idx2crd(tv(t, v), (rows, cols))
            out.setdefault((r, c), (t, v))
    return out, nt


def draw(layout, path=None, tv_layout=None, title=None, color=None, cell_size=0.45, dpi=90):
    """Render ``layout`` (static, rank 1 or 2) to a PNG: one cell per coordinate, labelled with
    its index. With ``tv_layout`` (a thread-value layout over the same 2-D tile), cells are
    coloured by the thread that owns them and labelled ``T<t> V<v>``. ``color``: a function of
    the index giving a colour number (default ``index % 8``; e.g. ``lambda i: i // 4 % 8``
    shows the 16-byte chunks of f32 data under a swizzle). ``path``: where to write the PNG
    (default: return the PNG bytes); ``dpi``: its resolution. Raises ImportError without
    matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError("ws.layout.draw needs matplotlib, an optional dependency: install it "
                          "with `pip install warpstage[draw]` (or `pip install matplotlib`)") from e
    rows, cols, cell = _grid(layout)
    owners, nt = _tv_cells(tv_layout, rows, cols) if tv_layout is not None else ({}, 0)
    title = title if title is not None else repr(_layout_of(layout))
    width = max(2.0, cols * cell_size + 0.8, 0.075 * len(title))     # room for the title
    fig, ax = plt.subplots(figsize=(width, max(1.2, rows * cell_size + 0.8)))
    cmap = plt.get_cmap("tab20")
    for r in range(rows):
        for c in range(cols):
            owner = owners.get((r, c))
            if owner is not None:
                face, text, size = cmap(owner[0] % 20), f"T{owner[0]}\nV{owner[1]}", 7
            else:
                idx = cell(r, c)
                shade = 19 if tv_layout is not None else (color(idx) if color else idx) % 8
                face, text, size = cmap(shade), str(idx), 8
            ax.add_patch(plt.Rectangle((c, rows - 1 - r), 1, 1, facecolor=face, edgecolor="black",
                                       linewidth=0.6))
            ax.text(c + 0.5, rows - 0.5 - r, text, ha="center", va="center", fontsize=size)
    ax.set_xlim(0, cols)
    ax.set_ylim(0, rows)
    ax.set_xticks([c + 0.5 for c in range(cols)], [str(c) for c in range(cols)], fontsize=7)
    ax.set_yticks([rows - 0.5 - r for r in range(rows)], [str(r) for r in range(rows)], fontsize=7)
    ax.tick_params(length=0)
    ax.xaxis.tick_top()
    ax.set_aspect("equal")
    ax.set_title(title, fontsize=9, pad=14)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=dpi)
        plt.close(fig)
        return path
    import io
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return buf.getvalue()
