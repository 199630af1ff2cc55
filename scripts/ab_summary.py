"""Short table of benchmarks/attention_ab.py results (its attention_ab.json): per shape, each
variant's median TFLOP/s, 25th-75th percentile and ratio to the first policy variant, labelled
by the fields that differ from that variant's (cuDNN by name).

    python3 scripts/ab_summary.py OUT/eaw19s/attention_ab.json OUT/eaw19c/attention_ab.json
"""
import json
import sys


def summarize(rows):
    """Lines of the table for ``rows`` (attention_ab.json's list, in its order)."""
    out, shape, base = [], None, None
    for r in rows:
        key = (tuple(r["shape"]), r["causal"])
        if key != shape:
            shape, base = key, None
            b, h, s, d = r["shape"]
            out.append(f"B={b} H={h} S={s} D={d} causal={r['causal']}")
        if r["name"].startswith("{"):
            fields = json.loads(r["name"])
            if base is None:
                base = (fields, r["median"])
            diff = {k: v for k, v in fields.items() if base[0].get(k) != v}
            label = json.dumps(diff) if diff else "(first variant)"
        else:
            label = r["name"]
        ratio = f"x {r['median'] / base[1]:.3f}" if base else ""
        out.append(f"  {label:44s} {r['median']:7.1f} [{r['q1']:6.1f}-{r['q3']:6.1f}] {ratio}")
    return out


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print("\n".join(summarize(json.load(open(p)))))
