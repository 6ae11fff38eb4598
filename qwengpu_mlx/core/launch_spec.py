"""A kernel's launch described in JSON: the ``KERNEL.json`` beside ``KERNEL.cu``.

One reader for every caller (``run``/``compile``/``check`` on the command line, the
dashboard's ``/run``), so that a launch file means the same thing everywhere. The form
(``examples/kernels/*.json``)::

    {"kernel": "vec_add", "block": 8, "grid": 1, "machine": "large",
     "args": {"a": [1, 2], "n": 2}, "description": "..."}

``block`` and ``grid`` are one integer (``x``) or a list of one to three (``[8, 4]`` is
``blockDim.x = 8, blockDim.y = 4``); ``shared`` is the launch's dynamic shared memory
in bytes (what ``extern __shared__ T s[]`` holds); ``machine`` names the machine the
launch needs (``--machine`` beats it).

Every key is optional; ``args`` maps a parameter name to a list of integers (a pointer)
or one integer (a scalar); a ``float`` parameter's values are numbers such as ``1.5``
(each the nearest float32 to the decimal as written) or ``"nan"``, ``"inf"``, ``"-inf"``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from qwengpu_mlx.core.errors import LaunchError
from qwengpu_mlx.core.machine import MACHINES

_DIM_KEYS = ("block", "grid")
DIM_NAMES = ("x", "y", "z")

Dims = tuple[int, int, int]


def dims3(value, what: str = "block") -> Dims:
    """A launch dimension as CUDA's ``dim3``: an int ``n`` is ``(n, 1, 1)``, a list or tuple
    of one to three ints fills ``x, y, z`` (the rest 1). ``LaunchError`` otherwise; the
    sizes' bounds are the machine's to check."""
    parts = [value] if _is_int(value) else value
    if not isinstance(parts, (list, tuple)) or not 1 <= len(parts) <= 3 or not all(_is_int(v) for v in parts):
        raise LaunchError(f"{what} must be an integer or a list of one to three integers (x, y, z), "
                          f"got {value!r}")
    return tuple(parts) + (1,) * (3 - len(parts))  # type: ignore[return-value]


def dims_value(value, what: str = "block") -> int | tuple[int, ...]:
    """A dimension as a launch states it: an int for a 1-D one (``8``, ``[8]``, ``(8, 1, 1)``),
    else the tuple up to its last dimension above 1 (``(8, 4)``): 1-D launches keep
    reading, printing and keying as the ints they always were."""
    x, y, z = dims3(value, what)
    if (y, z) == (1, 1):
        return x
    return (x, y) if z == 1 else (x, y, z)


def dims_text(value) -> str:
    """``8`` or ``8,4``: how the command line writes a dimension."""
    d = dims_value(value)
    return str(d) if isinstance(d, int) else ",".join(map(str, d))


def parse_dims(text: str, what: str = "block") -> int | tuple[int, ...]:
    """``--block 8,4`` -> ``(8, 4)``; ``--block 8`` -> ``8``."""
    try:
        parts = [int(p) for p in text.split(",")]
    except ValueError:
        raise LaunchError(f"--{what} {text!r}: expected X, X,Y or X,Y,Z (integers)") from None
    return dims_value(parts, f"--{what}")


def spec_beside(source: str | Path) -> Path | None:
    """``KERNEL.json`` next to ``KERNEL.cu`` (or ``.ptx``) when there is one."""
    j = Path(source).with_suffix(".json")
    return j if j.is_file() else None


def read_launch_spec(path: str | Path) -> dict:
    """The launch file as a dict with the keys above, checked; ``LaunchError`` (one line,
    naming the file) for a file that is missing, not JSON or not of this form."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(), parse_float=str)  # a float's decimal as written: one rounding to float32
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
    for key in _DIM_KEYS:
        if key in data:
            try:
                dims3(data[key], repr(key))
            except LaunchError as e:
                raise LaunchError(f"{path}: {e}") from None
    if "shared" in data and not (_is_int(data["shared"]) and data["shared"] >= 0):
        raise LaunchError(f"{path}: 'shared' must be a number of bytes (an integer, 0 or more)")
    if "machine" in data and data["machine"] not in MACHINES:
        raise LaunchError(f"{path}: 'machine' must be one of {', '.join(sorted(MACHINES))}")
    if "kernel" in data and not isinstance(data["kernel"], str):
        raise LaunchError(f"{path}: 'kernel' must be a kernel name")
    args = data.get("args", {})
    if not isinstance(args, dict):
        raise LaunchError(f"{path}: 'args' must be an object of NAME: value")
    for name, v in args.items():
        if not (_is_value(v) or (isinstance(v, list) and all(_is_value(x) for x in v))):
            raise LaunchError(f"{path}: args.{name} must be a number or a list of numbers (a float parameter's "
                              f"may be \"nan\", \"inf\" or \"-inf\")")


_FLOAT_TEXT = re.compile(r"-?(\d+\.?\d*([eE][-+]?\d+)?|nan|inf)", re.IGNORECASE)


def _is_value(x) -> bool:
    """An argument's value: an integer, or a float's text (``parse_float=str`` keeps a JSON
    number's decimal; NaN and the infinities are the strings "nan", "inf", "-inf"); whether
    the parameter takes it is the binding's to say, from the parameter's type."""
    return _is_int(x) or (isinstance(x, str) and _FLOAT_TEXT.fullmatch(x) is not None)
