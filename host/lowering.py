"""PTX kernel + launch arguments -> machine program (the ROM image and memory image).

The stages, one module each, run by :func:`lower` in this order:

0. ``binding``: the launch's shape checked, ``--arg`` values checked against the
   parameters, arrays and ``__shared__`` variables laid out in memory.
   ``launch_dims`` then turns ``%tid.y`` and the other launch dimensions into
   arithmetic on the machine's linear ``%tid.x``/``%ctaid.x``, right after translation.
1. ``translate``: PTX instructions -> linear IR over virtual registers (``LInstr``),
   rejecting what the machine lacks (doubles, 64-bit division, unknown instructions)
   with the PTX line; the arguments are then bound into it (``binding.bind_constants``).
2. ``fold``: parameters become immediates (pointer parameters their arrays' byte
   addresses), single-definition constants and special registers are folded into
   operands, and 64-bit address arithmetic collapses to 32-bit byte arithmetic;
   ``wide_index`` clamps wide products and ``addresses`` makes every 32-bit address
   behave as its exact one.
3. ``blocks``: basic blocks cut into machine blocks of ``slots_per_block``
   instructions, barriers as block terminators, empty jumps threaded, blocks merged,
   reconvergence points (IPDOM) attached, then ``regalloc``: virtual registers -> the
   15 registers (and predicates) per lane.

The IR the stages pass along (``LInstr``, ``MBlock``, ...) is defined in ``ir.py``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from qwengpu_mlx.core.errors import ResourceError, RomError, UnsupportedError
from qwengpu_mlx.core.isa import Program
from qwengpu_mlx.core.launch_spec import Dims, dims3
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, LARGE_MACHINE, MachineConfig

from qwengpu_mlx.host import binding, blocks, float_coalesce, float_routines, float_spill, ranges, regalloc, wide_index
from qwengpu_mlx.host.addresses import exact_addresses
from qwengpu_mlx.host.fold import fold_constants
from qwengpu_mlx.host.frontend import demangle_kernel_name
from qwengpu_mlx.host.launch_dims import lower_launch_specials
from qwengpu_mlx.host.ptx_ast import PtxKernel, PtxModule
from qwengpu_mlx.host.signature import KernelParam
from qwengpu_mlx.host.srcloc import located
from qwengpu_mlx.host.translate import Translator
from qwengpu_mlx.host.validate import check_program, validate_kernel


@dataclass(frozen=True)
class Tries:
    """Which of :func:`finish_program`'s tries a lowering makes, in its order: every one for
    a launch (``EVERY_TRY``); one level alone to measure what that level costs
    (``bench/float_cost.py``), without the bench reaching into the stages. A lowering
    whose tries all fail is refused as any other."""

    inlined: bool = True  # first the kernel's own translation, its float routines inlined
    sharings: tuple[int | str, ...] | None = None  # then these levels of float_routines.sharing_levels
    # (indices, or SPILL_LEVEL: the level saving across calls, whatever its index); None: each
    budgets: tuple | None = None  # a level saving across calls: these float_spill budgets (None: save nothing)
    greedy_cut: bool = True  # a level also cut for fewest blocks where the fewest-token cut does not fit


EVERY_TRY = Tries()
SPILL_LEVEL = "spill"
"""In ``Tries.sharings``: the level that saves what is live across calls (``float_spill``),
not the compact one after it (``float_unit``): its index differs from kernel to kernel."""


def lower(module: PtxModule, kernel: PtxKernel, params: list[KernelParam],
          args: dict, *, block_dim: int | tuple = 4, grid_dim: int | tuple = 1,
          machine: MachineConfig = DEFAULT_MACHINE, few_tokens: bool = True, shared_bytes: int = 0,
          tries: Tries = EVERY_TRY) -> Program:
    """Lower one PTX kernel bound to one launch's arguments into a machine program.

    ``block_dim``/``grid_dim``: an int (``x``) or up to three dimensions, run as linear
    ones (``launch_dims``); ``shared_bytes``: the launch's dynamic shared memory.
    ``few_tokens``: guard short branches (``ifconvert``) and cut blocks where the fewest
    launch tokens come back (``packing``); False gives the plain greedy lowering, kept
    to measure the two against each other. A refusal about the whole kernel names the
    kernel's ``.cu`` line (``srcloc.located``). ``tries``: which of the float routines'
    sharing levels are tried (:class:`Tries`).
    """
    block, grid = dims3(block_dim, "block"), dims3(grid_dim, "grid")
    try:
        return _lower(module, kernel, params, args, block, grid, machine, few_tokens, shared_bytes, tries)
    except RomError as e:
        hint = ""
        if machine.rom_blocks < LARGE_MACHINE.rom_blocks and _lowers(
                module, kernel, params, args, block, grid, LARGE_MACHINE, few_tokens, shared_bytes, tries):
            hint = f"; this needs --machine large, which has a ROM of {LARGE_MACHINE.rom_blocks} blocks"
        if getattr(e, "source", None) is None:
            raise located(RomError, kernel, f"{e}{hint}") from None
        e.args = (f"{e}{hint}",)
        raise
    except (ResourceError, UnsupportedError) as e:
        if getattr(e, "source", None) is not None:
            raise
        raise located(type(e), kernel, str(e)) from None


def _lowers(*how) -> bool:
    """Whether the kernel lowers with these arguments (on another machine: the large
    machine's hint is given only where that machine would run the kernel)."""
    try:
        _lower(*how)
    except (ResourceError, UnsupportedError):
        return False
    return True


def _lower(module: PtxModule, kernel: PtxKernel, params: list[KernelParam], args: dict, block: Dims,
           grid: Dims, machine: MachineConfig, few_tokens: bool, shared_bytes: int, tries: Tries) -> Program:
    kname = demangle_kernel_name(kernel.name)
    binding.check_launch_shape(kernel, params, block, grid, machine, kname)
    validate_kernel(module, kernel)
    values = binding.bind_arguments(params, args, kname)
    shared_vars, dynamic = binding.shared_variables(module, kernel)
    dynamic = binding.size_dynamic_shared(dynamic, shared_bytes, kernel, machine)
    layout = binding.layout_memory(params, values, shared_vars, machine, kname, dynamic)

    tr = Translator(kernel, {v.name for v in shared_vars + dynamic}, binding.param_kinds(kernel, params))
    bbs = tr.run()
    return finish_program(bbs, tr.wide, kernel, params, values, layout, block, grid, machine, few_tokens,
                          tr.shared_variants, frame_first=True, tries=tries)


def finish_program(bbs: list, wide: set, kernel: PtxKernel, params: list[KernelParam], values: dict,
                   layout: binding.MemoryLayout, block: Dims, grid: Dims, machine: MachineConfig,
                   few_tokens: bool, variants=None, frame_first: bool = False,
                   tries: Tries = EVERY_TRY) -> Program:
    """Translated blocks + the launch's bound memory -> the checked machine program.

    The stages after translation (launch dimensions, arguments bound, fold, address
    exactness, blocks and registers), shared by a single kernel's launch and a
    program's (``program_lowering``), so that a new stage lands in both. ``variants()``
    (``Translator.shared_variants``): the kernel translated with its float routines
    shared (``float_routines``), tried in turn where the inlined ones do not fit, each
    cut for fewest tokens and then, where that does not fit, for fewest blocks (the
    plain greedy cut); when none fits, the refusal says what sharing did
    (``float_routines.refusal_after_sharing``). At the last sharing, what is live across
    a routine's call is saved to a frame in memory around it (``float_spill``), the frame
    before the arrays with ``frame_first`` (a single kernel's launch, whose arrays may
    move), else after them. ``tries``: which of these are made (:class:`Tries`).
    """
    refusals: list[ResourceError] = []
    if tries.inlined:
        try:
            return _finish(bbs, wide, kernel, params, values, layout, block, grid, machine, few_tokens)
        except ResourceError as inlined:
            if variants is None:
                raise
            refusals.append(inlined)
    tried = _chosen(variants() if variants is not None else [], tries.sharings)
    coalesced: dict = {}  # one coalescing per translation, budget and frame, whichever cut follows
    for translate in tried:
        for few in dict.fromkeys((few_tokens, False) if tries.greedy_cut else (few_tokens,)):
            for spill in float_spill.budgets(translate, tries.budgets):
                try:
                    if spill is None:
                        shared_bbs, shared_wide = translate()
                        return _finish(shared_bbs, shared_wide, kernel, params, values, layout, block, grid, machine,
                                       few)
                    return _finish_saving(translate, spill, kernel, params, values, layout, block, grid, machine,
                                          few, frame_first, coalesced)
                except RomError as shared:  # saving more values only adds instructions
                    refusals.append(shared)
                    break
                except ResourceError as shared:
                    refusals.append(shared)
    if not refusals:
        raise ValueError(f"no lowering tried: {tries}")
    raise float_routines.refusal_after_sharing(refusals, kernel) if tried else refusals[-1]


def _chosen(variants: list, levels: tuple[int | str, ...] | None) -> list:
    """The sharing levels' translations to try: each, or those at ``levels`` (indices, one
    beyond a kernel's levels being no try; or ``SPILL_LEVEL``)."""
    if levels is None:
        return variants
    spill = [v for v in variants if v.sharing.spill and not v.sharing.compact][:1]
    return [v for i in levels for v in (spill if i == SPILL_LEVEL else
                                        [variants[i]] if -len(variants) <= i < len(variants) else [])]


def _finish_saving(translate, budget: float_spill.Budget, kernel: PtxKernel, params: list[KernelParam],
                   values: dict, layout: binding.MemoryLayout, block: Dims, grid: Dims, machine: MachineConfig,
                   few_tokens: bool, frame_first: bool, coalesced: dict) -> Program:
    """A translation at the sharing level that saves what is live across a call to a frame
    (``float_spill``), laid out with two words a thread, then as many as the calls save.
    ``coalesced``: the blocks after ``float_coalesce`` by (translation, budget, frame), as
    the fewest-token cut left them for the greedy cut (they are the same blocks: the cut
    comes after; coalescing is most of the time a kernel this level refuses takes)."""
    slots = 2
    while True:
        framed, *frame = float_spill.framed(layout, block[0] * block[1] * block[2], machine.mem_words, frame_first,
                                            slots)
        bbs, wide = translate()
        try:
            return _finish(bbs, wide, kernel, params, values, framed, block, grid, machine, few_tokens,
                           (budget, tuple(frame)), coalesced.setdefault((id(translate), budget, tuple(frame)), []))
        except float_spill.FrameTooSmall as small:
            if small.slots <= slots:
                raise
            slots = small.slots


def _saved_and_coalesced(bbs: list, spill: tuple, block_dim: int, kname: str, machine: MachineConfig,
                         coalesced: list) -> list:
    """What is live across calls saved to the frame and the calls' moves coalesced
    (``float_spill``, ``float_coalesce``), or a copy of the blocks ``coalesced`` holds from
    an earlier cut of the same translation (later stages change instructions in place)."""
    if not coalesced:
        float_spill.save_across_calls(bbs, *spill, block_dim, kname)
        float_coalesce.coalesce_moves(bbs, machine.usable_regs)
        coalesced.append(copy.deepcopy(bbs))
        return bbs
    return copy.deepcopy(coalesced[0])


def _finish(bbs: list, wide: set, kernel: PtxKernel, params: list[KernelParam], values: dict,
            layout: binding.MemoryLayout, block: Dims, grid: Dims, machine: MachineConfig,
            few_tokens: bool, spill: tuple | None = None, coalesced: list | None = None) -> Program:
    """``coalesced``: empty, or the blocks an earlier call with the same translation and
    ``spill`` had after coalescing (it is filled with them here)."""
    kname = demangle_kernel_name(kernel.name)
    lower_launch_specials(bbs, block, grid)
    blocks.check_size(bbs, machine, kname)
    binding.bind_constants(bbs, kernel, params, values, layout)

    block_dim, grid_dim = block[0] * block[1] * block[2], grid[0] * grid[1] * grid[2]
    fold_constants(bbs, {}, wide)
    specials = ranges.special_ranges(block_dim, grid_dim, machine.lanes)
    wide_index.clamp_wide_products(bbs, wide, specials)
    exact_addresses(bbs, wide, specials, 4 * machine.mem_words)
    if spill is not None:  # the last sharing: (budget, frame) to save what is live across a routine's call
        bbs = _saved_and_coalesced(bbs, spill, block_dim, kname, machine, [] if coalesced is None else coalesced)

    floats = regalloc.float_registers(kernel.reg_decls)  # their machine registers shown as floats
    mblocks, regs_used, preds_used = blocks.fewest_token_blocks(bbs, machine, kname, grid_dim, floats) \
        if few_tokens else blocks.machine_blocks(bbs, machine, kname, few_tokens=False, float_names=floats)
    program = Program(kernel=kname, blocks=mblocks, arrays=layout.arrays,
                      shared=layout.shared, scalars={p.name: values[p.name] for p in params if not p.pointer},
                      memory=layout.image, regs_used=regs_used, preds_used=preds_used,
                      block_dim=block_dim, grid_dim=grid_dim)
    check_program(program, machine)
    return program
