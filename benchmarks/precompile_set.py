"""Compile every variant of one ``attention_ab.SETS`` entry in parallel processes into the disk
cache (``WARPSTAGE_CACHE_DIR``), so that ``attention_ab.py --set NAME`` then only loads them.

    PYTHONPATH=.:benchmarks python3 benchmarks/precompile_set.py NAME [--workers 12]
"""
import argparse
import multiprocessing as mp
import time

import attention
import attention_ab


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", choices=sorted(attention_ab.SETS))
    ap.add_argument("--workers", type=int, default=12)
    args = ap.parse_args()
    jobs = [(d, c, f) for (d, c), fs in attention_ab.SETS[args.name].items() for f in fs]
    t = time.perf_counter()
    with mp.get_context("spawn").Pool(args.workers) as pool:
        for job, sec, status in pool.map(attention._compile_one, jobs):
            print(job, f"{sec:.1f} s", status[:200])
    print(f"compiled {len(jobs)} in {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
