"""scripts/ab_summary.py: benchmarks/attention_ab.py's JSON as a short table, each policy
variant labelled by the fields that differ from the shape's first variant and its ratio to it."""
import json

from example_loader import load_file


def _rows():
    base = dict(tile_n=128, consumer_wgs=3, exp_after_wait=False)
    row = lambda shape, name, m: dict(shape=shape, causal=False, name=name, err=None,
                                      median=m, q1=m - 1, q3=m + 1)
    return [row([4, 16, 4096, 64], "cuDNN", 470.0),
            row([4, 16, 4096, 64], json.dumps(base, sort_keys=True), 500.0),
            row([4, 16, 4096, 64], json.dumps(dict(base, exp_after_wait=True)), 515.0),
            row([2, 16, 8192, 64], json.dumps(dict(base, tile_n=80)), 400.0),
            row([2, 16, 8192, 64], json.dumps(base), 440.0)]


def test_labels_and_ratios_per_shape():
    lines = load_file("scripts/ab_summary.py", "ab_summary").summarize(_rows())
    assert lines[0] == "B=4 H=16 S=4096 D=64 causal=False"
    assert lines[1].split()[0] == "cuDNN" and "x " not in lines[1]      # before any variant
    assert "(first variant)" in lines[2] and lines[2].endswith("x 1.000")
    assert '{"exp_after_wait": true}' in lines[3] and lines[3].endswith("x 1.030")
    assert lines[4] == "B=2 H=16 S=8192 D=64 causal=False"
    # a new shape starts its own base: its first variant (tile_n=80) is 1.000
    assert "(first variant)" in lines[5] and lines[5].endswith("x 1.000")
    assert '{"tile_n": 128}' in lines[6] and lines[6].endswith("x 1.100")
