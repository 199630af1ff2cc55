"""The simulator's wgmma layouts pinned against hand-written formulas (independent of
ws.wgmma.TileLayout): descriptor decoding, the canonical shared-memory layouts with and without
swizzle, and the accumulator fragment map. (The H200 agreed with these layouts: see
tests/lang/test_wgmma_gpu.py.)"""
import numpy as np

import warpstage as ws
from warpstage.sim.ops_wgmma import decode_descriptor, fragment_coords, operand_addresses

MODE = {0: 0, 128: 1, 64: 2, 32: 3}


def desc(start, lbo, sbo, swizzle):
    return (start >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | MODE[swizzle] << 62


def test_descriptor_fields():
    d = desc(0x1230, 2048, 1024, 64) | 3 << 49
    assert decode_descriptor(d) == {"start": 0x1230, "lbo": 2048, "sbo": 1024, "base_offset": 3,
                                    "swizzle": 64}


def test_k_major_128_byte_swizzle_is_row_major_with_chunks_xored_by_row():
    # a (64, 64) bf16 tile, rows of 128 bytes; chunk j of row r is stored at chunk j ^ (r % 8)
    mn, k = np.meshgrid(np.arange(64), np.arange(16), indexing="ij")
    for step in range(4):                        # the k16 slices advance the start by 32 bytes
        col = 16 * step + k
        want = mn * 128 + ((col * 2 // 16) ^ (mn % 8)) * 16 + (col * 2) % 16
        got = operand_addresses(desc(32 * step, 16, 1024, 128), 64, mn_major=False)
        assert np.array_equal(got, want)


def test_k_major_without_swizzle_reads_8x8_core_matrices():
    # core matrices (8 rows x 16 bytes, contiguous) numbered with K fastest: (i, j) at 128*(2i+j)
    mn, k = np.meshgrid(np.arange(32), np.arange(16), indexing="ij")
    want = 128 * (2 * (mn // 8) + k // 8) + (mn % 8) * 16 + (k % 8) * 2
    assert np.array_equal(operand_addresses(desc(0, 128, 256, 0), 32, mn_major=False), want)


def test_mn_major_64_byte_swizzle():
    # B stored row-major (k, n) with 32 bf16 (64 bytes) per row; the 64-byte swizzle XORs
    # address bits 4-5 with bits 7-8, i.e. chunk n // 8 with (k // 2) % 4
    n, k = np.meshgrid(np.arange(32), np.arange(16), indexing="ij")
    want = k * 64 + ((n // 8) ^ ((k // 2) % 4)) * 16 + (n % 8) * 2
    assert np.array_equal(operand_addresses(desc(0, 1024, 512, 64), 32, mn_major=True), want)


def test_mn_major_without_swizzle():
    # core matrices of 8 k-rows x 8 n (16 bytes) contiguous; n-groups 256 bytes apart (SBO),
    # k-groups 128 bytes apart (LBO)
    n, k = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    want = (n // 8) * 256 + (k // 8) * 128 + (k % 8) * 16 + (n % 8) * 2
    assert np.array_equal(operand_addresses(desc(0, 128, 256, 0), 16, mn_major=True), want)


def test_fragment_map_is_the_language_layout():
    for n in (8, 16, 72, 256):
        rows, cols = fragment_coords(n)
        for t in (0, 5, 37, 90, 127):
            coords = ws.wgmma.accumulator_coords(n, t)
            assert [(int(rows[t // 32, i, t % 32]), int(cols[t // 32, i, t % 32]))
                    for i in range(n // 2)] == coords
