"""Draw the pictures of docs/layouts.md (docs/img/layout_*.png) with ws.layout.draw.
Run from the repository root: PYTHONPATH=. python3 scripts/draw_layout_docs.py (needs matplotlib)."""
import warpstage as ws

L = ws.layout
PICTURES = {
    "layout_col_major": (L.make_layout((4, 8)), None, "(4,8):(1,4)  column-major (the default)"),
    "layout_row_major": (L.make_layout((4, 8), (8, 1)), None, "(4,8):(8,1)  row-major"),
    "layout_composition": (L.composition(L.make_layout((6, 2), (8, 2)), L.make_layout((4, 3), (3, 1))),
                           None, "(6,2):(8,2) o (4,3):(3,1) = ((2,2),3):((24,2),8)"),
    "layout_tiles_8x8": (L.make_layout((8, 8), (8, 1)), None,
                         "(8,8):(8,1), coloured by 2 x 4 tile"),
    "layout_zipped_divide": (L.zipped_divide(L.make_layout((8, 8), (8, 1)), (2, 4)), None,
                             "zipped_divide((8,8):(8,1), (2,4)): rows = one tile, cols = tiles"),
    "layout_swizzle_128b_f32": (L.smem_layout_atom(128, ws.Float32), None,
                                "Sw<3,2,3> o (8,32):(32,1): the 128-byte swizzle atom, f32 "
                                "(colour: 16-byte chunk)"),
    "layout_mma_accumulator_tv": (L.make_layout((16, 8)), L.mma_accumulator_tv(),
                                  "mma.sync m16n8 accumulator: ((4,8),(2,2)):((32,1),(16,8))"),
}

if __name__ == "__main__":
    for name, (layout, tv, title) in PICTURES.items():
        chunks = ((lambda i: i // 4) if "swizzle" in name else
                  (lambda i: (i // 16) * 2 + (i % 8) // 4) if "8x8" in name or "zipped" in name
                  else None)
        print(L.draw(layout, f"docs/img/{name}.png", tv_layout=tv, title=title, color=chunks,
                     dpi=72))
