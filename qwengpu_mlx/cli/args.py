"""A launch's arguments on the command line: ``--arg``, ``--args FILE`` and ``KERNEL.json``.

Where the values come from, first match wins per value:

* ``--arg NAME=VALUES`` (each one overrides that parameter of a launch file);
* ``--args FILE`` (a launch file of the ``launch_spec`` form), else, only when no
  ``--arg`` is given at all, the ``KERNEL.json`` beside ``KERNEL.cu``;
* ``--block``/``--grid``/``--shared``/``--kernel`` given on the command line beat the
  file's, and without either the defaults are block 4, grid 1, no dynamic shared memory.
  ``block`` and ``grid`` are an int for a 1-D launch, a tuple (``(8, 4)``) otherwise.

Why not merge the beside-file with ``--arg``: a user who types every argument of
``dot.cu`` must get the launch they typed, not the example's block size.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from qwengpu_mlx.core.errors import LaunchError
from qwengpu_mlx.core.launch_spec import dims_value, read_launch_spec, spec_beside
from qwengpu_mlx.host.frontend import demangle_kernel_name

DEFAULT_BLOCK, DEFAULT_GRID, DEFAULT_SHARED = 4, 1, 0


@dataclass
class LaunchArgs:
    """A launch's arguments and geometry, resolved, and the file they came from (if any)."""

    args: dict
    block: int | tuple[int, ...]
    grid: int | tuple[int, ...]
    kernel: str | None
    spec: Path | None  # the launch file read, None when every value came from --arg
    machine: str | None = None  # the machine the launch file names, if any
    shared: int = DEFAULT_SHARED  # dynamic shared memory, bytes


def parse_arg(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise LaunchError(f"--arg {text!r}: expected NAME=v1,v2,... or NAME=v")
    name, _, value = text.partition("=")
    return name.strip(), value.strip()


def collect_args(pairs: list[str] | None) -> dict[str, str]:
    """``--arg`` values by name; a name given twice is an error."""
    out: dict[str, str] = {}
    for text in pairs or []:
        name, value = parse_arg(text)
        if name in out:
            raise LaunchError(f"--arg {name} given twice")
        out[name] = value
    return out


def _spec_path(ns, explicit: dict) -> Path | None:
    if getattr(ns, "args_file", None):
        return Path(ns.args_file)
    if explicit or getattr(ns, "source", None) is None:
        return None
    return spec_beside(ns.source)


def resolve(ns) -> LaunchArgs:
    """The launch's arguments from ``ns`` (``--arg``, ``--args``, ``--block``...), as above."""
    explicit = collect_args(getattr(ns, "arg", None))
    path = _spec_path(ns, explicit)
    spec = read_launch_spec(path) if path is not None else {}
    args = {**spec.get("args", {}), **explicit}
    pick = lambda mine, key, default: mine if mine is not None else spec.get(key, default)  # noqa: E731
    return LaunchArgs(args, dims_value(pick(ns.block, "block", DEFAULT_BLOCK), "block"),
                      dims_value(pick(ns.grid, "grid", DEFAULT_GRID), "grid"),
                      pick(ns.kernel, "kernel", None), path, spec.get("machine"),
                      pick(getattr(ns, "shared", None), "shared", DEFAULT_SHARED))


def _example(param) -> str:
    return f"--arg {param.name}=1,2,3" if param.pointer else f"--arg {param.name}=3"


def check_complete(ck, launch: LaunchArgs) -> None:
    """Refuse a launch with parameters left unset, showing the syntax that sets them.

    Why here and not only in ``bind``: the command line knows the options and the launch
    file a newcomer can use; the binder does not."""
    names = [p.name for p in ck.params]
    missing = [p for p in ck.params if p.name not in launch.args]
    if not missing:
        return
    extra = [n for n in launch.args if n not in names]
    msg = [f"kernel `{demangle_kernel_name(ck.kernel.name)}` takes parameters ({', '.join(names)})",
           "missing --arg for " + ", ".join(p.name for p in missing)]
    if extra:
        msg.append("no parameter named " + ", ".join(extra))
    where = (f"in {launch.spec}" if launch.spec is not None
             else f"in {Path(ck.source).with_suffix('.json').name}" if ck.source is not None else "in --args FILE")
    pointer = next((p for p in missing if p.pointer), None)  # one example of each kind
    scalar = next((p for p in missing if not p.pointer), None)
    hint = " ".join(_example(p) for p in (pointer, scalar) if p is not None)
    raise LaunchError("; ".join(msg) + f"; e.g. {hint} (or put them {where})")
