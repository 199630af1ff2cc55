"""A worker process of the autotuner: ``python -m warpstage.tune.worker_main`` (see
warpstage/tune/workers.py for the protocol). Not imported by the package, so that ``-m`` runs it
as a fresh module."""
from __future__ import annotations

import base64
import os
import pickle
import sys


def _send(out, line) -> None:
    out.write(base64.b64encode(pickle.dumps(line)) + b"\n")
    out.flush()


def _main() -> int:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)                           # the candidates' own prints go to stderr
    job = pickle.loads(sys.stdin.buffer.read())
    from warpstage.tune.capture import capture_launches
    from warpstage.tune.portable import resolve, unpack
    from warpstage.tune.report import failure
    from warpstage.tune.timing import warm_up
    from warpstage.tune.workers import READY, make_call
    target = resolve(job["target"])
    args, kwargs = unpack(job["args"], job.get("device"))
    timer = unpack(job["timer"]) if job.get("timer") else None
    on_gpu = job.get("device_target") == "cuda"
    if job.get("device_target"):
        import warpstage
        warpstage.set_target(job["device_target"])
    _send(out, (READY, True, None))
    for index, blob, launch in job["items"]:
        try:
            config = unpack(blob)
            call = make_call(job["kind"], target, config, args, kwargs, launch, job["position"])
            if job["mode"] == "compile":
                payload = capture_launches(call)
            else:
                if index == job["items"][0][0]:
                    warm_up(call)               # the process's first launch, untimed
                payload = float(timer.measure(call, config, job["warmup"], job["rep"]))
            line = (index, True, payload)
        except Exception as e:  # noqa: BLE001 - the candidate's failure is its result
            line = (index, False, failure(e, job["mode"]))
        _send(out, line)
        if not line[1] and job["mode"] == "time" and on_gpu:
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(_main())
