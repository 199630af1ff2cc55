"""scripts/ncu_stalls.py reads Nsight Compute's source-page CSV: columns by name, the steady
loop (the innermost loop holding HGMMA with the most samples), samples per instruction class,
and a clear error for a file that is not such a page. The CSV here is made up in ncu's form (a
preamble line, '#'-prefixed names, hex addresses, thousands separators)."""
import pytest

from example_loader import load_file


def _tool():
    return load_file("scripts/ncu_stalls.py", "ncu_stalls")


PROGRAM = [  # (offset, SASS text, all samples, stall_long_sb, stall_wait)
    (0x00, "MOV R1, c[0x0][0x28]", 5, 0, 5),
    (0x10, "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ", 3, 0, 0),   # prologue (no loop)
    (0x20, "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR9+0x10], R10", 40, 0, 40),   # outer loop
    (0x30, "BAR.SYNC.DEFER_BLOCKING R15, 0x100", 1200, 0, 1200),               # inner loop
    (0x40, "HGMMA.64x80x16.F32.BF16 R88, gdesc[UR44], RZ, !UPT", 300, 0, 0),
    (0x50, "WARPGROUP.DEPBAR.LE gsb0, 0x1", 2500, 0, 2500),
    (0x60, "MUFU.EX2 R90, R90", 700, 0, 0),
    (0x70, "MUFU.EX2 R91, R91", 300, 0, 0),
    (0x80, "FMNMX R10, R90, R91, !PT", 100, 100, 0),
    (0x90, "@P0 BRA 0x30", 10, 0, 0),
    (0xa0, "@P1 BRA 0x20", 2, 0, 0),
    (0xb0, "EXIT", 0, 0, 0),
]


def _write(path, rows=PROGRAM):
    lines = ['"Kernel Name","flash_attention_wgmma_kernel"',
             '"# Address","Source","Warp Stall Sampling (All Samples)",'
             '"Warp Stall Sampling (Not-issued Samples)","stall_long_sb","stall_wait"']
    for off, text, n, sb, wait in rows:
        lines.append(f'"0x7f00{off:08x}","{text}","{n:,}","{n // 2}","{sb}","{wait:,}"')
    path.write_text("\n".join(lines) + "\n")


def test_the_steady_loop_and_its_classes(tmp_path):
    tool = _tool()
    _write(tmp_path / "a.csv")
    rows = tool.read_source(str(tmp_path / "a.csv"))
    assert len(rows) == len(PROGRAM) and rows[5]["samples"] == 2500
    assert rows[5]["reasons"] == {"wait": 2500.0}
    assert tool.steady_loop(rows) == (3, 9)            # BAR.SYNC .. the inner BRA
    classes = tool.by_class(rows, 3, 9)
    assert classes["MUFU.EX2"] == 1000 and classes["WARPGROUP.DEPBAR"] == 2500
    assert classes["BAR.SYNC"] == 1200 and classes["HGMMA"] == 300 and classes["FMNMX"] == 100


def test_two_files_side_by_side(tmp_path, capsys):
    tool = _tool()
    _write(tmp_path / "a.csv")
    other = [(o, t, n * 2 if "MUFU" in t else n, sb, w) for o, t, n, sb, w in PROGRAM]
    _write(tmp_path / "b.csv", other)
    assert tool.main([str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--top", "3"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("MUFU.EX2"))
    a, b = (float(x.strip().rstrip("%")) for x in line.split(None, 1)[1].split("|"))
    assert a == pytest.approx(100 * 1000 / 5110, abs=0.06)
    assert b == pytest.approx(100 * 2000 / 6110, abs=0.06)
    assert "+   2  48.9%" in out          # the DEPBAR: 2500 of 5110, two after the loop's start


def test_a_file_that_is_not_a_source_page(tmp_path, capsys):
    tool = _tool()
    (tmp_path / "x.csv").write_text('"Metric Name","Metric Value"\n"Duration","1"\n')
    with pytest.raises(ValueError, match="no header row with 'Address' and 'Source'"):
        tool.read_source(str(tmp_path / "x.csv"))
    assert tool.main([str(tmp_path / "x.csv")]) == 1
    assert "--page source --csv" in capsys.readouterr().err
