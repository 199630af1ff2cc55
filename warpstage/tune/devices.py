"""The GPUs a tuning run times its candidates on (docs/autotune.md, "Several GPUs").

The *home* device is the GPU of the call's tensor arguments (cuda:0 without any): what the
winner will run on, whose name keys the disk record. ``devices`` (``ws.autotune(devices=)``,
else ``WARPSTAGE_TUNE_DEVICES``) adds others:

- None: the home device alone (the default: in a torch.distributed job every rank tunes on its
  own GPU and never disturbs another rank's);
- 'all': the home device, then every other visible GPU of the same name and compute capability;
- a list of ordinals (e.g. ``[0, 1]``): those and the home device, all of the home device's
  name and compute capability (a candidate's time on another model would not rank it on this
  one).

Timing on several GPUs runs one timing worker process per GPU, each started with
``CUDA_VISIBLE_DEVICES`` naming that GPU alone (mapped through the parent's own
``CUDA_VISIBLE_DEVICES``), so that everything in it — the arguments rebuilt on ``cuda:0``, the
kernel's module, the timer's CUDA events — is on that GPU without being told.
"""
from __future__ import annotations

from typing import List, Optional

from ..errors import ArgumentError

__all__ = ["home_device", "check_option", "resolve", "from_option", "worker_env", "describe"]


def home_device(args: tuple, kwargs: dict) -> int:
    """The GPU ordinal of the first CUDA tensor among the arguments (tuples, lists and dict
    values searched), else 0."""
    from ..runtime.tensors import as_tensor_arg

    def walk(v):
        if isinstance(v, (tuple, list)):
            for x in v:
                yield from walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                yield from walk(x)
        else:
            yield v
    for v in walk((args, kwargs)):
        if v is None or isinstance(v, (bool, int, float, str)):
            continue
        try:
            ta = as_tensor_arg(v)
        except Exception:  # noqa: BLE001 - not a tensor warpstage reads: not placed
            continue
        if ta is not None and ta.device == "cuda":
            return ta.device_index or 0
    return 0


def describe(ordinal: int) -> str:
    """'cuda:N (NAME, sm_XY)'."""
    from ..runtime.target import device_properties
    p = device_properties(ordinal)
    return f"cuda:{ordinal} ({p.name}, sm_{p.cc_major}{p.cc_minor})"


def _same_model(a: int, b: int) -> bool:
    from ..runtime.target import device_properties
    pa, pb = device_properties(a), device_properties(b)
    return (pa.name, pa.cc_major, pa.cc_minor) == (pb.name, pb.cc_major, pb.cc_minor)


def _parse(spec, where: str):
    """'all', or a list of ints, from the option or the environment variable's text."""
    if isinstance(spec, str):
        text = spec.strip().lower()
        if text == "all":
            return "all"
        try:
            return [int(p) for p in text.split(",") if p.strip()]
        except ValueError:
            pass
    elif isinstance(spec, (list, tuple)) and spec and \
            all(isinstance(d, int) and not isinstance(d, bool) for d in spec):
        return list(spec)
    raise ArgumentError(f"{where}={spec!r}; expected None, 'all' or GPU ordinals such as "
                        "[0, 1]. Fix: devices='all' to time on every GPU like the first")


def check_option(spec) -> None:
    """Raise ArgumentError now, at ``ws.autotune(devices=...)``, for a malformed ``spec``
    (which GPUs exist is known at the first call)."""
    _parse(spec, "ws.autotune: devices")


def resolve(spec, home: int, where: str = "ws.autotune: devices") -> List[int]:
    """The ordinals to time on, the home device first (module docstring). Raises
    ArgumentError for a malformed ``spec``, a GPU that does not exist, one listed twice, or one
    of another model than the home device."""
    from ..runtime import driver
    if spec is None:
        return [home]
    spec = _parse(spec, where)
    count = driver.device_count()
    if spec == "all":
        return [home] + [d for d in range(count) if d != home and _same_model(d, home)]
    for d in spec:
        if not 0 <= d < count:
            raise ArgumentError(f"{where}: GPU {d} does not exist; this process sees {count} "
                                f"(cuda:0..cuda:{count - 1}). Fix: devices='all', or ordinals "
                                "below the count")
    if len(set(spec)) != len(spec):
        raise ArgumentError(f"{where}={spec!r} names a GPU twice; expected distinct ordinals. "
                            f"Fix: devices={sorted(set(spec))!r}")
    for d in spec:
        if not _same_model(d, home):
            raise ArgumentError(f"{where}: {describe(d)} is another model than the arguments' "
                                f"{describe(home)}; candidates are ranked by their times on "
                                "one model. Fix: list GPUs like the arguments' only, or "
                                "devices='all'")
    return [home] + [d for d in spec if d != home]


def from_option(devices, home: int) -> List[int]:
    """``resolve`` of the ``devices`` option, or of WARPSTAGE_TUNE_DEVICES when it is None."""
    if devices is not None:
        return resolve(devices, home)
    from ..options import env_tune_devices
    env = env_tune_devices()
    return resolve(env, home, "the WARPSTAGE_TUNE_DEVICES environment variable") \
        if env is not None else [home]


def worker_env(ordinal: int) -> dict:
    """The environment a timing worker for GPU ``ordinal`` (as this process numbers it) is
    started with: ``CUDA_VISIBLE_DEVICES`` naming that GPU alone, through this process's own
    ``CUDA_VISIBLE_DEVICES`` when it is set (its ``ordinal``-th entry)."""
    from ..options import env_visible_devices
    visible: Optional[list] = env_visible_devices()
    return {"CUDA_VISIBLE_DEVICES": visible[ordinal] if visible is not None else str(ordinal)}
