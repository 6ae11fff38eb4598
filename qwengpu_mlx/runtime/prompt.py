"""The launch prompt: what the host feeds before the model writes the launch."""

from __future__ import annotations

from qwengpu_mlx.core.encoding import encode_program
from qwengpu_mlx.core.errors import ResourceError
from qwengpu_mlx.core.isa import Program
from qwengpu_mlx.core.machine import MachineConfig
from qwengpu_mlx.core.vocab import MAX_GRID, vocab_for


def prompt_tokens(program: Program, machine: MachineConfig) -> list[int]:
    """DIMS, GRID, the program as PROG records, the inputs as MEM records, GO."""
    v = vocab_for(machine)
    toks = [v.id("DIMS", ntid=program.block_dim), v.id("GRID", nctaid=program.grid_dim)]
    for b, pieces in enumerate(encode_program(program, machine)):
        for p, value in enumerate(pieces):
            if value:
                toks += v.record(v.id("PROG", block=b, piece=p), value)
    for addr, value in enumerate(program.memory):
        if value:
            toks += v.record(v.id("MEM", item=v.input_item, addr=addr), value)
    toks.append(v.id("GO"))
    return toks


def check_launchable(program: Program, machine: MachineConfig) -> None:
    """Refuse, before any token, what the circuit does not run."""
    if program.grid_dim > MAX_GRID:
        raise ResourceError(f"the model runs grids of up to {MAX_GRID} thread blocks "
                            f"(CTA tokens), not gridDim.x = {program.grid_dim}")
