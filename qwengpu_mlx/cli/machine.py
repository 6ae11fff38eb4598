"""``qwengpu-mlx machine``: the machine's limits, what a kernel may use."""

from __future__ import annotations

from qwengpu_mlx.core.machine import MACHINES, machine_name


def machine_rows(m) -> list[tuple[str, str]]:
    """The machine's limits as (what, value) rows: what a kernel may use."""
    return [("warpSize", "32 lanes to a kernel: its thread block (README, warps)"),
            ("machine warps", f"{m.lanes} lanes each, up to {m.max_warps} a block (blockDim.x <= {m.max_block_dim})"),
            ("registers", f"{m.regs} rows per lane ({m.usable_regs} usable; row 0 reads 0)"),
            ("predicates", f"{m.preds} per lane"),
            ("program ROM", f"{m.rom_blocks} blocks x {m.slots_per_block} instructions"),
            ("memory", f"{m.mem_words} words of {m.word_bits} bits (global arrays and __shared__)"),
            ("step budget", f"{m.step_budget} EXEC steps per launch (run --step-budget)")]


def run(ns) -> int:
    """One limit a line, aligned: readable on a terminal, greppable in a pipe."""
    machine = MACHINES[ns.machine]
    rows = machine_rows(machine)
    width = max(len(k) for k, _ in rows)
    alias = " (the default)" if ns.machine == "default" else ""  # which machine "default" is today
    print(f"machine {machine_name(machine)}{alias}:")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    return 0
