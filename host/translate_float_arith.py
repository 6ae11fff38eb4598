"""``.f32`` arithmetic and comparison (``add``, ``sub``, ``mul``, ``fma``, ``div``, ``rcp``,
``sqrt``, ``neg``, ``abs``, ``min``, ``max``, ``setp``) -> IR routines of integer instructions.

Each handler checks the instruction's modifiers against what the routines compute
(round to nearest even, subnormals kept: clang's code without fast-math) and refuses
the rest at the user's line: a rounding mode other than ``.rn`` (``__fadd_rz`` and
friends), ``.ftz`` (flush subnormals: fast-math), ``.sat`` (clamp to [0, 1]) and the
approximate ``div``/``rcp``/``sqrt``. The routines live in ``float_addmul``, ``float_fma``,
``float_divide``, ``float_sqrt`` and ``float_compare``; a guarded instruction runs its
routine on every lane and writes its destination under the guard (the routines have no
side effects).
"""

from __future__ import annotations

from qwengpu_mlx.core.isa import Op

from qwengpu_mlx.host import float_addmul, float_compare, float_divide, float_fma, float_sqrt
from qwengpu_mlx.host.float_pack import FloatEmitter
from qwengpu_mlx.host.ir import LInstr, VPred, VReg
from qwengpu_mlx.host.ptx_ast import PairRef
from qwengpu_mlx.host.translate_types import unsupported

FAST_MATH_HINT = "compile without fast-math (no -ffast-math / --use_fast_math)"


def _check_mods(ins, allowed: set[str]) -> None:
    """Refuse a modifier the routines do not compute, naming it and the way around it."""
    name = f"`{ins.opcode}{''.join('.' + m for m in ins.mods)}`"
    for m in ins.mods:
        if m in allowed or m == "f32":
            continue
        if m in ("rz", "rm", "rp"):
            raise unsupported(ins, f"{name}: rounding mode .{m} is not supported (only round to nearest even, "
                                   f".rn); use the ordinary operator (nearest even) instead of "
                                   f"__fadd_r{m[1]}-style intrinsics")
        if m == "ftz":
            raise unsupported(ins, f"{name}: .ftz (flush subnormals to zero) is not supported; subnormals are "
                                   f"kept as IEEE-754 says: {FAST_MATH_HINT}")
        if m == "sat":
            raise unsupported(ins, f"{name}: .sat (clamp to [0, 1]) is not supported; clamp with fminf/fmaxf")
        raise unsupported(ins, f"{name}: the modifier .{m} is not supported for floats")


def _emitter(tr, ins) -> FloatEmitter:
    return FloatEmitter(ins.line, ins.src, ins.text, tr.fresh)


def _routine(tr, ins, nsrc: int, body, shared: str | None = None) -> list:
    """Operands, the routine ``body(em, target, *srcs)`` and the guarded write of its result;
    ``shared``: the operation's name where its routine may be one copy the kernel calls
    (``float_routines``), inlined unless the lowering asks for that."""
    d = tr.dst(ins, ins.operands[0])
    pre: list = []
    srcs = [tr.value(ins, o, pre) for o in ins.operands[1:1 + nsrc]]
    guard = tr.guard_of(ins)

    def inline() -> list:
        target = d if guard is None else tr.fresh("%fr")
        items = body(_emitter(tr, ins), target, *srcs)
        if guard is not None:
            op = Op.PMOV if ins.opcode == "setp" else Op.MOV
            kw = {"psrcs": (VPred(target),)} if op is Op.PMOV else {"srcs": (VReg(target),)}
            items.append(LInstr(op, d, guard=guard, line=ins.line, src=ins.src, text=ins.text, **kw))
        return items

    if shared is None:
        return pre + inline()
    return pre + tr.float_calls.emit(shared, srcs, d, guard, _emitter(tr, ins), inline)


def op_add(tr, ins):
    _check_mods(ins, {"rn"})
    return _routine(tr, ins, 2, float_addmul.add, "add")


def op_sub(tr, ins):
    _check_mods(ins, {"rn"})
    return _routine(tr, ins, 2, lambda em, d, a, b: float_addmul.add(em, d, a, b, negate_b=True), "sub")


def op_mul(tr, ins):
    _check_mods(ins, {"rn"})
    return _routine(tr, ins, 2, float_addmul.mul, "mul")


def op_fma(tr, ins):
    if "rn" not in ins.mods:
        raise unsupported(ins, f"`{ins.opcode}{''.join('.' + m for m in ins.mods)}`: fma needs a rounding "
                               f"mode, and only .rn (nearest even) is supported")
    _check_mods(ins, {"rn"})
    return _routine(tr, ins, 3, float_fma.fma, "fma")


def _check_rounded(ins, what: str) -> None:
    """``div``/``rcp``/``sqrt`` are computed correctly rounded (``.rn``); the approximate
    forms (fast-math's ``.approx``, ``div.full``) are refused rather than given other bits."""
    if "approx" in ins.mods or "full" in ins.mods:
        raise unsupported(ins, f"`{ins.opcode}{''.join('.' + m for m in ins.mods)}`: the approximate {what} "
                               f"(fast-math, __fdividef, __frcp/__fsqrt approximations) is not supported; "
                               f"{FAST_MATH_HINT}, which makes it the correctly rounded .rn form")
    if "rn" not in ins.mods:
        raise unsupported(ins, f"`{ins.opcode}{''.join('.' + m for m in ins.mods)}`: only the correctly "
                               f"rounded .rn form of {what} is supported")


def op_div(tr, ins):
    _check_rounded(ins, "division")
    _check_mods(ins, {"rn"})
    return _routine(tr, ins, 2, float_divide.divide, "div")


def op_rcp(tr, ins):
    _check_rounded(ins, "reciprocal")
    _check_mods(ins, {"rn"})
    return _routine(tr, ins, 1, float_divide.reciprocal, "rcp")


def op_sqrt(tr, ins):
    _check_rounded(ins, "square root")
    _check_mods(ins, {"rn"})
    return _routine(tr, ins, 1, float_sqrt.square_root, "sqrt")


def op_neg(tr, ins):
    _check_mods(ins, set())
    return _routine(tr, ins, 1, float_compare.neg)


def op_abs(tr, ins):
    _check_mods(ins, set())
    return _routine(tr, ins, 1, float_compare.absolute)


def op_min(tr, ins):
    _check_mods(ins, set())
    return _routine(tr, ins, 2, lambda em, d, a, b: float_compare.min_max(em, d, a, b, is_max=False))


def op_max(tr, ins):
    _check_mods(ins, set())
    return _routine(tr, ins, 2, lambda em, d, a, b: float_compare.min_max(em, d, a, b, is_max=True))


def op_setp(tr, ins):
    cmp = next((m for m in ins.mods if m in float_compare.COMPARISONS), None)
    if cmp is None:
        raise unsupported(ins, f"`{ins.opcode}{''.join('.' + m for m in ins.mods)}`: comparison not supported")
    if any(m in ("and", "or", "xor") for m in ins.mods) or isinstance(ins.operands[0], PairRef):
        raise unsupported(ins, "setp with a combining predicate or two destinations is not supported")
    _check_mods(ins, {cmp})
    return _routine(tr, ins, 2, lambda em, d, a, b: float_compare.setp(em, d, cmp, a, b))


ARITH_OPS: dict = {
    "add": op_add, "sub": op_sub, "mul": op_mul, "fma": op_fma, "div": op_div, "rcp": op_rcp, "sqrt": op_sqrt,
    "neg": op_neg, "abs": op_abs, "min": op_min, "max": op_max, "setp": op_setp,
}
"""PTX opcode -> handler ``(tr, ins) -> IR items``."""
