"""A kernel's launch described in JSON: the ``KERNEL.json`` beside ``KERNEL.cu``.

One reader for every caller (``run``/``compile``/``check`` on the command line, the
dashboard's ``/run``), so that a launch file means the same thing everywhere. The form
(``examples/kernels/*.json``)::

    {"kernel": "vec_add", "block": 8, "grid": 1, "machine": "large",
     "args": {"a": [1, 2], "n": 2}, "description": "..."}

``machine`` names the machine the launch needs (``--machine`` beats it).

Every key is optional; ``args`` maps a parameter name to a list of integers (a pointer)
or one integer (a scalar).
"""

from __future__ import annotations

import json
from pathlib import Path

from qwengpu_mlx.core.errors import LaunchError
from qwengpu_mlx.core.machine import MACHINES

_INT_KEYS = ("block", "grid")


def spec_beside(source: str | Path) -> Path | None:
    """``KERNEL.json`` next to ``KERNEL.cu`` (or ``.ptx``) when there is one."""
    j = Path(source).with_suffix(".json")
    return j if j.is_file() else None


def read_launch_spec(path: str | Path) -> dict:
    """The launch file as a dict with the keys above, checked; ``LaunchError`` (one line,
    naming the file) for a file that is missing, not JSON or not of this form."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise LaunchError(f"{path}: no such file") from None
    except OSError as e:
        raise LaunchError(f"{path}: cannot read it ({e.strerror or e})") from None
    except ValueError as e:
        where = f" at line {e.lineno} column {e.colno}" if isinstance(e, json.JSONDecodeError) else ""
        raise LaunchError(f"{path}: not JSON{where}") from None
    if not isinstance(data, dict):
        raise LaunchError(f"{path}: expected a JSON object such as {{\"args\": {{\"n\": 3}}}}")
    _check_form(path, data)
    return data


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_form(path: Path, data: dict) -> None:
    """Each known key has the type a launch needs (unknown keys are left alone)."""
    for key in _INT_KEYS:
        if key in data and not _is_int(data[key]):
            raise LaunchError(f"{path}: {key!r} must be an integer")
    if "machine" in data and data["machine"] not in MACHINES:
        raise LaunchError(f"{path}: 'machine' must be one of {', '.join(sorted(MACHINES))}")
    if "kernel" in data and not isinstance(data["kernel"], str):
        raise LaunchError(f"{path}: 'kernel' must be a kernel name")
    args = data.get("args", {})
    if not isinstance(args, dict):
        raise LaunchError(f"{path}: 'args' must be an object of NAME: value")
    for name, v in args.items():
        if not (_is_int(v) or (isinstance(v, list) and all(_is_int(x) for x in v))):
            raise LaunchError(f"{path}: args.{name} must be an integer or a list of integers")
