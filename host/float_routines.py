"""Float routines shared by their call sites: one copy per kernel, called from every use,
where inlining a copy at every use would not fit the ROM.

A float operation is a routine of 20 to 55 machine blocks (``float_addmul``, ``float_fma``,
``float_divide``, ...), so a kernel with a few of them (a mean and a variance: an add, a
subtract, an fma, two divisions and a conversion) outgrows even the large machine's 128
blocks when each use has its own copy. Shared, a routine is called:

* **the call site** copies its operands into the routine's argument registers, sets its
  return-site number (up to four sites in one or two predicates, else in a register)
  and jumps to the routine's entry (``LTerm(returns_to=...)`` names where the call
  continues);
* **the routine** computes into its result register and ends in a **return dispatch**:
  a tree of branches on the number's predicates, or a chain of blocks each comparing
  the register with one site's number, to that site's continuation, which copies the
  result to the instruction's destination, under its guard.

Divergence: the machine reconverges diverged lanes at a branch's immediate
post-dominator (``cfg``). Computed over the jumps to a routine, the routine would
post-dominate every branch with a call on both sides, and lanes would wait at its
entry and enter it together from different sites. So reconvergence is computed with
each call standing for a jump to its own continuation (``blocks._attach_reconvergence``):
no branch of the kernel reconverges inside a routine, lanes enter a routine only from
one call site at a time, and every lane of a warp there holds the same return-site
number, so the dispatch never diverges; each branch inside the routine reconverges
inside it. Lanes of one warp that call from two sites (the two sides of an ``if``) run
the routine once per side, as they would run two inlined copies.

Registers: liveness follows the jumps (a call to the routine, the dispatch to every
continuation), so a value live across any call of a routine is kept through it and no
call clobbers another site's live values; a guarded instruction writes its destination
under its guard at the continuation, as the inlined copy does.

When: the lowering inlines every routine (the fewest steps and tokens) and shares only
where that does not fit the ROM, in the steps :func:`sharing_levels` lists: the kind
that saves most ROM alone, then every kind with two or more uses, then ``add``, ``sub``
and ``mul`` as calls of the ``fma`` routine (``a + b = fma(a, 1, b)``, ``a * b = fma(a, b, -0)``,
each exactly rounded once as the add and the multiply are, NaNs canonical, and zero's
sign as IEEE-754 gives it for both), where a kernel has an fma; each cut for fewest
tokens, then for fewest blocks (``lowering.finish_program``); last, that deepest sharing
again with what is live across each call saved to memory around it and the calls'
moves coalesced (``float_spill``, ``float_coalesce``), where registers or predicates
ran out: its return sites always a register (``SITE_NUMBER``), which the call stores
and the dispatch loads. A call costs its argument
moves, a jump and the dispatch's branches: one per bit of its site's number (up to four
sites), or its rank in a chain of comparisons (more), a few steps in all.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from functools import partial

from qwengpu_mlx.core.errors import ResourceError, RomError
from qwengpu_mlx.core.isa import Imm, Op

from qwengpu_mlx.host import float_addmul, float_divide, float_fma, float_sqrt, float_unit, srcloc
from qwengpu_mlx.host.float_pack import SIGN
from qwengpu_mlx.host.ir import LLabel, LTerm, VPred, VReg

ONE = 0x3F800000
NEGATIVE_ZERO = SIGN

BODIES = {"add": float_addmul.add, "mul": float_addmul.mul, "fma": float_fma.fma,
          "div": float_divide.divide, "sqrt": float_sqrt.square_root}
"""The routine of each arithmetic kind, ``body(em, dst, *args) -> IR items`` (a conversion
brings its own)."""

THROUGH_FMA = ("add", "sub", "mul")
"""The operations an ``fma`` routine computes exactly when a kernel shares it."""


@dataclass(frozen=True)
class Sharing:
    """Which routine kinds a translation calls rather than inlines; ``through_fma``: add,
    sub and mul are calls of the fma routine; ``sites``: each shared kind's number of
    call sites (the inlined translation's count), which decides how a call names its
    return site."""

    kinds: frozenset[str] = frozenset()
    through_fma: bool = False
    sites: tuple[tuple[str, int], ...] = ()
    spill: bool = False  # what is live across a call saved to memory around it (float_spill)
    compact: bool = False  # division an entry of the fma routine, sharing its tail (float_unit)


INLINE = Sharing()

SITE_NUMBER = "%fsite"
"""The name (a prefix) of a routine's return-site register where its sharing ``spill``s:
the number is then always a register, which ``float_spill`` saves to memory at the call
and loads back before the dispatch's first compare of it."""

PREDICATE_SITES = 4
"""Up to this many call sites a routine's return site is held in predicates (one bit
each, two at most) and its dispatch is a tree of branches on them: no register held
through the routine, and one branch per bit. More sites: a register holds the site's
number and the dispatch compares it with each in turn."""


@dataclass
class _Routine:
    """One shared routine: its registers, entry label and call sites' continuations."""

    body: object  # body(em, dst, *args) -> IR items
    em: object  # the first site's emitter: the routine's instructions carry its line
    args: list[str]
    res: str  # the result
    entry: str
    site_bits: list[str]  # the return site's predicates (a few sites), else []
    ret: str  # the return-site number's register (many sites)
    sites: list[str] = field(default_factory=list)  # continuation labels, site 0 first
    entries: dict[str, str] = field(default_factory=dict)  # another front's name -> its entry label

    def numbering(self, em) -> list:
        """A call site's setting of its own number (the next site's), by its emitter ``em``."""
        number = len(self.sites)
        if not self.site_bits:
            return [em.ins(Op.MOV, self.ret, (Imm(number + 1),))]
        return [em.ins(Op.SETP, p, (Imm(0), Imm(0)), cmp="eq" if number >> j & 1 else "ne")
                for j, p in enumerate(self.site_bits)]

    def dispatch(self, fresh) -> list:
        """The return: to the continuation of the site the lane came from."""
        line = self.em.line
        if self.site_bits:
            return _branch_tree(self.sites, self.site_bits, fresh, line)
        out: list = []
        for number, back in enumerate(self.sites[:-1], 1):
            p = fresh("%fretp")
            out += [self.em.ins(Op.SETP, p, (VReg(self.ret), Imm(number)), cmp="eq"),
                    LTerm("bra", back, VPred(p), line)]
        return out + [LTerm("bra", self.sites[-1], None, line)]


def _branch_tree(sites: list[str], bits: list[str], fresh, line: int) -> list:
    """Branches on the site number's bits, the highest first: ``sites[n]`` where the bits spell ``n``."""
    if len(sites) == 1:
        return [LTerm("bra", sites[0], None, line)]
    j = (len(sites) - 1).bit_length() - 1
    low, high = sites[:1 << j], sites[1 << j:]
    if len(high) == 1:
        return [LTerm("bra", high[0], VPred(bits[j]), line)] + _branch_tree(low, bits, fresh, line)
    upper = fresh("$fret_upper")
    return [LTerm("bra", upper, VPred(bits[j]), line), *_branch_tree(low, bits, fresh, line),
            LLabel(upper), *_branch_tree(high, bits, fresh, line)]


def _canonical(op: str, srcs: list, through_fma: bool, em) -> tuple[str, list, list]:
    """``(kind, arguments, instructions before the call)`` of an operation as a routine
    kind computes it: ``sub`` is ``add`` of ``-b``, ``rcp`` is ``div`` of 1, and with
    ``through_fma`` add, sub and mul are ``fma`` (a compact sharing's division too, at its
    own entry: ``_call``)."""
    pre: list = []
    if op == "sub":
        b = srcs[1]
        if isinstance(b, Imm):
            b = Imm(b.value ^ SIGN)
        else:
            nb = em.reg()
            pre.append(em.ins(Op.XOR, nb, (b, Imm(SIGN))))
            b = VReg(nb)
        srcs, op = [srcs[0], b], "add"
    if through_fma and op == "add":
        return "fma", [srcs[0], Imm(ONE), srcs[1]], pre
    if through_fma and op == "mul":
        return "fma", [srcs[0], srcs[1], Imm(NEGATIVE_ZERO)], pre
    if op == "rcp":
        return "div", [Imm(ONE), srcs[0]], pre
    return op, list(srcs), pre


def kind_of(op: str, through_fma: bool, compact: bool = False) -> str:
    """The routine kind an operation runs (``op`` an arithmetic opcode or a conversion's
    kind); ``compact``: a division is an entry of the fma routine (``float_unit``)."""
    if through_fma and op in THROUGH_FMA or compact and float_unit.entry_of(op):
        return "fma"
    return {"sub": "add", "rcp": "div"}.get(op, op)


class RoutineCalls:
    """One translation's float routines: each use inlined, or a call of the kind's one copy
    where ``sharing`` names the kind; the uses and inlined sizes counted for the choice
    (:func:`sharing_levels`)."""

    def __init__(self, sharing: Sharing = INLINE):
        self.sharing = sharing
        self.uses: Counter = Counter()  # kind -> uses (add, sub and mul as they are)
        self.fused_uses: Counter = Counter()  # kind -> uses, add, sub and mul counted as fma
        self.inlined_items: Counter = Counter()  # kind -> IR items its inlined copies took
        self._routines: dict[str, _Routine] = {}

    def emit(self, op: str, srcs: list, dst: str, guard: VPred | None, em, inline, body=None) -> list:
        """A use of ``op`` on ``srcs`` into ``dst`` (under ``guard``): ``inline()``'s items, or a
        call. ``body``: the routine (default the arithmetic kind's, ``BODIES``)."""
        self.uses[kind_of(op, False)] += 1
        self.fused_uses[kind_of(op, True)] += 1
        compact = self.sharing.compact
        if kind_of(op, self.sharing.through_fma, compact) not in self.sharing.kinds:
            items = inline()  # the copy as it always was: nothing else named or emitted
            self.inlined_items[kind_of(op, self.sharing.through_fma, compact)] += len(items)
            return items
        kind, args, pre = _canonical(op, srcs, self.sharing.through_fma, em)
        if compact and float_unit.entry_of(kind):
            return pre + self._call("fma", args, dst, guard, em, BODIES["fma"], float_unit.entry_of(kind))
        return pre + self._call(kind, args, dst, guard, em, body or BODIES[kind])

    def _call(self, kind: str, args: list, dst: str, guard: VPred | None, em, body, front: str | None = None) -> list:
        r = self._routines.get(kind) or self._routine(kind, len(args), em, body)
        back = em.fresh(f"$fcalled_{kind}_")
        out = [em.ins(Op.MOV, a, (v,)) for a, v in zip(r.args, args)] + r.numbering(em)
        r.sites.append(back)
        entry = r.entry if front is None else r.entries.setdefault(front, em.fresh(f"$froutine_{kind}_{front}_"))
        return out + [LTerm("bra", entry, None, em.line, returns_to=back), LLabel(back),
                      em.ins(Op.MOV, dst, (VReg(r.res),), guard=guard)]

    def _routine(self, kind: str, nargs: int, em, body) -> _Routine:
        """A kind's one copy, made at its first call (a compact fma routine, which a
        division may call first, with the fma's three arguments and its other entries)."""
        count = dict(self.sharing.sites).get(kind, PREDICATE_SITES + 1)
        in_predicates = count <= PREDICATE_SITES and not self.sharing.spill
        bits = [em.fresh("%fretp") for _ in range((count - 1).bit_length())] if in_predicates else []
        unit = self.sharing.compact and kind == "fma"
        names = ([em.fresh("%farg") for _ in range(3 if unit else nargs)], em.fresh("%fres"),
                 em.fresh(f"$froutine_{kind}_"))
        r = _Routine(body, em, *names, bits, em.fresh(SITE_NUMBER if self.sharing.spill else "%fret"))
        if unit:
            r.body = partial(float_unit.unit, entries=r.entries)
        self._routines[kind] = r
        return r

    def routines(self, fresh) -> list:
        """Every shared routine's items, after the kernel: its entry, its body, its dispatch."""
        out: list = []
        for r in self._routines.values():
            if r.site_bits and len(r.sites) > 1 << len(r.site_bits):
                raise AssertionError(f"internal error: {len(r.sites)} calls of the {r.entry} routine, "
                                     f"{1 << len(r.site_bits)} expected")
            out += [LLabel(r.entry), *r.body(r.em, r.res, *(VReg(a) for a in r.args)), *r.dispatch(fresh)]
        return out


def sharing_levels(calls: RoutineCalls) -> list[Sharing]:
    """The sharings to try, in order, where a kernel's inlined routines do not fit: the
    kind whose one copy saves the most ROM, then every kind used twice or more, then (a
    kernel with an fma and an add, sub or mul) those as calls of the fma routine."""
    saving = {k: calls.inlined_items[k] * (n - 1) // n for k, n in calls.uses.items() if n >= 2}
    ranked = sorted(saving, key=lambda k: -saving[k])
    sites = tuple(sorted(calls.uses.items()))
    levels = [Sharing(frozenset(ranked[:1]), sites=sites), Sharing(frozenset(ranked), sites=sites)] if ranked else []
    if calls.uses["fma"] and any(calls.uses[k] for k in ("add", "mul")):
        fused = frozenset(k for k, n in calls.fused_uses.items() if n >= 2)
        levels.append(Sharing(fused, through_fma=True, sites=tuple(sorted(calls.fused_uses.items()))))
    if levels:  # the deepest again, saving what is live across its calls (float_spill)
        levels.append(replace(levels[-1], spill=True))
    entries = {k for k in calls.uses if float_unit.entry_of(k)}
    if levels and levels[-1].through_fma and entries:  # and the division, int -> float entries of the fma routine
        levels.append(replace(levels[-1], kinds=(levels[-1].kinds | {"fma"}) - entries, compact=True))
    return list(dict.fromkeys(levels))


FLOAT_ARITHMETIC = ("add", "sub", "mul", "fma", "div", "rcp", "sqrt", "cvt")
"""The PTX float operations that are routines (moves, loads, stores and compares are not
counted: they are a few instructions where they are)."""

SHARED_STILL = "; with its float routines shared (one copy each, called from every use) it still does not fit: "


def refusal_after_sharing(refusals: list[ResourceError], kernel) -> ResourceError:
    """The refusal of a kernel that fits neither inlined nor with its routines shared
    (``refusals``: each try's, the last sharing most). A last one about registers after
    ROM ones says both: the ROM's, then that sharing needs more than the machine has
    (what is live across a routine's calls is kept through it). A ROM one says what
    sharing did and the way left that is true of this kernel: where clang emitted a float
    operation of one source position more than once (an unrolled loop, or a math function
    such as ``roundf`` using it twice: the position cannot tell), ``#pragma unroll 1`` if it
    is a loop; else its
    float operations, for the user to split them over two kernels. Where ROM was in the
    way the refusal stays a ``RomError``: the lowering then says whether the large
    machine's ROM would hold the kernel."""
    last = refusals[-1]
    roms = [r for r in refusals if isinstance(r, RomError)]
    if not roms:
        return last
    if not isinstance(last, RomError):
        return RomError(f"{roms[-1]}; with its float routines shared (one copy each, called from every use) "
                        f"it does not fit either: {last}; a value live across any call of a routine is kept "
                        f"through the routine: split the work over two kernels")
    ops = _float_operations(kernel)
    copied = [(at, op, n) for (at, op), n in ops.items() if at is not None and n >= 2]
    if copied:
        at, op, n = max(copied, key=lambda c: c[2])
        return RomError(f"{last}{SHARED_STILL}clang emitted line {at[0]}'s float `{op}` {n} times (an "
                        f"unrolled loop, or a math function that uses it more than once); if it is a loop, "
                        f"`#pragma unroll 1` before it keeps one copy")
    kinds = Counter(op.split(".")[0] for (_, op) in ops.elements())
    listed = ", ".join(f"{op} x{n}" if n > 1 else op for op, n in sorted(kinds.items()))
    return RomError(f"{last}{SHARED_STILL}its float operations ({listed}) are each a routine of many blocks"
                    f"; split the work over two kernels, or use fewer kinds of float operation")


def _float_operations(kernel) -> Counter:
    """``((line, column) or None, PTX operation) -> count`` of the kernel's float routine
    operations by the ``.cu`` position (PTX ``.loc``) each came from. A position before the
    kernel's own line is a ``__device__`` function's, whose copies are its calls (the
    ``.loc`` does not say which), never an unrolled loop's: counted without its position."""
    first = srcloc.kernel_source(kernel)
    out: Counter = Counter()
    for ins in kernel.body:
        if getattr(ins, "opcode", None) in FLOAT_ARITHMETIC and "f32" in ins.mods:
            own = ins.src is not None and first is not None and ins.src.line >= first.line
            out[(ins.src.line, ins.src.col) if own else None, ".".join((ins.opcode, *ins.mods))] += 1
    return out
