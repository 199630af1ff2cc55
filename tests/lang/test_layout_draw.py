"""ws.layout.print_layout (text) and draw (PNG, when matplotlib is installed)."""
import pytest

import warpstage as ws

L = ws.layout


def test_print_layout_shows_every_index_in_a_grid(capsys):
    L.print_layout(L.make_layout((2, 3), (3, 1)))
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "(2,3):(3,1)"
    assert out[-2].split("|")[1].split() == ["0", "1", "2"]
    assert out[-1].split("|")[1].split() == ["3", "4", "5"]


def test_draw_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    path = L.draw(L.make_layout((4, 8), (8, 1)), tmp_path / "a.png")
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    data = L.draw(L.make_layout((16, 8)), tv_layout=L.mma_accumulator_tv())
    assert data[:4] == b"\x89PNG"


def test_draw_of_a_rank_3_layout_is_an_error():
    with pytest.raises(ws.OperandError, match="rank 1 or 2"):
        L.layout_table(L.make_layout((2, 2, 2)))
