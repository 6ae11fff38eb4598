"""PTX kernel + launch arguments -> machine program (the ROM image and memory image).

The stages, one module each, run by :func:`lower` in this order:

0. ``binding``: the launch's shape checked, ``--arg`` values checked against the
   parameters, arrays and ``__shared__`` variables laid out in memory.
1. ``translate``: PTX instructions -> linear IR over virtual registers (``LInstr``),
   rejecting what the machine lacks (floats, 64-bit math beyond addresses, general
   division, sub-word memory, unknown instructions) with the PTX line; the arguments
   are then bound into it (``binding.bind_constants``).
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

from qwengpu_mlx.core.isa import Program
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig

from qwengpu_mlx.host import binding, blocks, ranges, wide_index
from qwengpu_mlx.host.addresses import exact_addresses
from qwengpu_mlx.host.fold import fold_constants
from qwengpu_mlx.host.frontend import demangle_kernel_name
from qwengpu_mlx.host.ptx_ast import PtxKernel, PtxModule
from qwengpu_mlx.host.signature import KernelParam
from qwengpu_mlx.host.translate import Translator
from qwengpu_mlx.host.validate import check_program, validate_kernel


def lower(module: PtxModule, kernel: PtxKernel, params: list[KernelParam],
          args: dict, *, block_dim: int = 4, grid_dim: int = 1,
          machine: MachineConfig = DEFAULT_MACHINE, few_tokens: bool = True) -> Program:
    """Lower one PTX kernel bound to one launch's arguments into a machine program.

    ``few_tokens``: guard short branches (``ifconvert``) and cut blocks where the fewest
    launch tokens come back (``packing``); False gives the plain greedy lowering, kept
    to measure the two against each other.
    """
    kname = demangle_kernel_name(kernel.name)
    binding.check_launch_shape(kernel, params, block_dim, grid_dim, machine, kname)
    validate_kernel(module, kernel)
    values = binding.bind_arguments(params, args, kname)
    shared_vars = binding.shared_variables(module, kernel)
    layout = binding.layout_memory(params, values, shared_vars, machine, kname)

    tr = Translator(kernel, {v.name for v in shared_vars}, binding.param_kinds(kernel, params))
    bbs = tr.run()
    blocks.check_size(bbs, machine, kname)
    binding.bind_constants(bbs, kernel, params, values, layout)

    fold_constants(bbs, {}, tr.wide)
    specials = ranges.special_ranges(block_dim, grid_dim, machine.lanes)
    wide_index.clamp_wide_products(bbs, tr.wide, specials)
    exact_addresses(bbs, tr.wide, specials, 4 * machine.mem_words)

    mblocks, regs_used, preds_used = blocks.fewest_token_blocks(bbs, machine, kname, grid_dim) if few_tokens \
        else blocks.machine_blocks(bbs, machine, kname, few_tokens=False)
    program = Program(kernel=kname, blocks=mblocks, arrays=layout.arrays,
                      shared=layout.shared, scalars={p.name: values[p.name] for p in params if not p.pointer},
                      memory=layout.image, regs_used=regs_used, preds_used=preds_used,
                      block_dim=block_dim, grid_dim=grid_dim)
    check_program(program, machine)
    return program
