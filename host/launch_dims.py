"""2-D and 3-D launches on a machine that numbers threads and blocks in one dimension.

The machine runs a thread block of ``bx * by * bz`` threads numbered by ``%tid.x`` and a
grid of ``gx * gy * gz`` blocks numbered by ``%ctaid.x``, both linear, exactly the order
CUDA numbers them in (``x`` fastest: a thread's linear index is ``x + y*bx + z*bx*by``,
the index warps and lanes follow). The launch's dimensions are known when the program
is bound, so :func:`lower_launch_specials` turns what the kernel reads into machine
arithmetic on the linear index, run by the model:

* ``%ntid.y``, ``%nctaid.z`` ... are the launch's constants (immediates);
* ``%tid.y`` is ``(%tid.x / bx) % by`` and so on, each division by a constant an exact
  low multiply and shift (``(t * m) >> k``, checked for every index the launch has) or
  a shift where the divisor is a power of two, each remainder an ``and`` or a ``mad``.

A 1-D launch keeps its programs as they were: ``%tid.x``, ``%ntid.x``, ``%ctaid.x`` and
``%nctaid.x`` stay the machine's own registers, ``%tid.y`` is 0 and ``%ntid.y`` 1.
"""

from __future__ import annotations

from dataclasses import replace

from qwengpu_mlx.core.errors import ResourceError
from qwengpu_mlx.core.isa import Imm, Op, Special
from qwengpu_mlx.core.launch_spec import Dims

from qwengpu_mlx.host.ir import BasicBlock, LInstr, VReg

LAUNCH_SPECIALS = ("tid.y", "tid.z", "ntid.y", "ntid.z", "ctaid.y", "ctaid.z", "nctaid.y", "nctaid.z")
"""PTX special registers a launch's dimensions give (beyond the machine's own ``.x`` ones)."""

_INDEX = {"tid": ("tid.x", "block"), "ctaid": ("ctaid.x", "grid")}


def exact_divider(d: int, count: int) -> tuple[int, int]:
    """``(m, k)`` with ``(t * m) >> k == t // d`` for every ``t < count`` and ``t * m`` below
    2^32 (the machine's low multiply then holds it exactly); ``m == 1`` is a plain shift."""
    if d & (d - 1) == 0:
        return 1, d.bit_length() - 1
    for k in range(1, 32):
        m = -(-(1 << k) // d)
        if (count - 1) * m >= 1 << 32:
            break
        if all((t * m) >> k == t // d for t in range(count)):
            return m, k
    raise ResourceError(f"a launch of {count} threads or blocks along a dimension of {d} is beyond the machine's "
                        f"32-bit index arithmetic; launch fewer")


class _Emitter:
    """Instructions computing launch indices, written before one instruction of a block."""

    def __init__(self, dims: dict[str, Dims], at: LInstr, fresh):
        self.dims, self.at, self.fresh, self.out = dims, at, fresh, []

    def emit(self, op: Op, srcs: tuple, dst: str | None = None) -> VReg:
        d = dst or self.fresh()
        self.out.append(LInstr(op, d, srcs, line=self.at.line, src=self.at.src, text=self.at.text))
        return VReg(d)

    def divide(self, v, d: int, count: int, dst: str | None = None):
        """``v // d`` for ``0 <= v < count``."""
        if d == 1:
            return v if dst is None else self.emit(Op.MOV, (v,), dst)
        m, k = exact_divider(d, count)
        if m != 1:
            v = self.emit(Op.MUL, (v, Imm(m)))
        return self.emit(Op.SHR, (v, Imm(k)), dst)

    def remainder(self, v, d: int, count: int, dst: str | None = None):
        """``v % d`` for ``0 <= v < count``."""
        if count <= d:
            return v if dst is None else self.emit(Op.MOV, (v,), dst)
        if d & (d - 1) == 0:
            return self.emit(Op.AND, (v, Imm(d - 1)), dst)
        q = self.divide(v, d, count)
        return self.emit(Op.MAD, (q, Imm(-d & 0xFFFFFFFF), v), dst)

    def index(self, name: str, dst: str | None = None):
        """``%tid.y`` (``%ctaid.z`` ...) from the linear ``%tid.x`` (``%ctaid.x``)."""
        base, axis = name.split(".")
        linear, which = _INDEX[base]
        x, y, z = self.dims[which]
        n, v = x * y * z, Special(linear)
        if axis == "x":
            return self.remainder(v, x, n, dst)
        if axis == "y":
            if z == 1:
                return self.divide(v, x, n, dst)
            return self.remainder(self.divide(v, x, n), y, y * z, dst)
        return self.divide(v, x * y, n, dst)


def _value_of(name: str, dims: dict[str, Dims]):
    """A launch special that is a constant of this launch (``%ntid.y``, ``%tid.z`` of a
    2-D block), or None when it must be computed."""
    base, axis = name.split(".")
    k = "xyz".index(axis)
    if base in ("ntid", "nctaid"):
        return Imm(dims["block" if base == "ntid" else "grid"][k])
    if dims[_INDEX[base][1]][k] == 1:
        return Imm(0)  # an index along a dimension of size 1
    return None


def _rewritten(block: Dims, grid: Dims) -> set[str]:
    """The specials a launch gives: the ``.y``/``.z`` ones always, the machine's ``.x``
    ones where the launch is not 1-D in that dimension (``%tid.x`` of an 8x4 block is
    ``%tid.x % 8`` of the machine's linear index)."""
    names = set(LAUNCH_SPECIALS)
    if block[1:] != (1, 1):
        names |= {"tid.x", "ntid.x"}
    if grid[1:] != (1, 1):
        names |= {"ctaid.x", "nctaid.x"}
    return names


def lower_launch_specials(blocks: list[BasicBlock], block: Dims, grid: Dims) -> None:
    """Every read of a launch special becomes an immediate or machine arithmetic on the
    linear indices, in place (see the module's docstring)."""
    dims = {"block": block, "grid": grid}
    names = _rewritten(block, grid)
    counter = iter(range(1, 1 << 30))

    def fresh() -> str:
        return f"%dim{next(counter)}"

    for bb in blocks:
        out = []
        for it in bb.items:
            if not isinstance(it, LInstr) or not any(isinstance(s, Special) and s.name in names for s in it.srcs):
                out.append(it)
                continue
            em = _Emitter(dims, it, fresh)
            if it.op is Op.MOV and it.guard is None and _value_of(it.srcs[0].name, dims) is None:
                em.index(it.srcs[0].name, it.dst)  # ``mov %r, %tid.y``: computed straight into %r
                out.extend(em.out)
                continue
            srcs = tuple(_operand(s, names, dims, em) for s in it.srcs)
            out.extend(em.out)
            out.append(replace(it, srcs=srcs))
        bb.items = out


def _operand(s, names: set[str], dims: dict[str, Dims], em: _Emitter):
    if not (isinstance(s, Special) and s.name in names):
        return s
    v = _value_of(s.name, dims)
    return v if v is not None else em.index(s.name)
