"""Which machine's circuit goes beside a Qwen3.5 base when the user names none.

A base has Qwen3.5-2B's shape, and a machine's circuit must fit it. A machine the user
names (``--machine large``) is that machine or a refusal saying which machine fits
(``folded``'s :class:`SpliceMisfit`). With none named, the user asked for a working chat
or checkpoint, not for a machine: the default machine when its circuit fits the shape,
else the published machine (which always fits), with one line saying so, so that moving
the default to a larger machine never turns ``chat --model Qwen/Qwen3.5-2B`` or
``build --base`` into a refusal.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MACHINES, PUBLISHED_MACHINE, MachineConfig, machine_name
from qwengpu_mlx.splice.build import SpliceMisfit

Fitted = TypeVar("Fitted")


def named_machine(name: str | None) -> MachineConfig | None:
    """The machine ``--machine NAME`` names; None for no name or the ``default`` alias (the
    splice then chooses: :func:`fitting_machine`)."""
    return None if name in (None, "default") else MACHINES[name]


def fitting_machine(machine: MachineConfig | None, fit: Callable[[MachineConfig], Fitted], *,
                    default: MachineConfig = DEFAULT_MACHINE,
                    say: Callable[[str], None] = lambda line: None) -> tuple[MachineConfig, Fitted]:
    """(the machine, ``fit(machine)``): ``fit`` compiles the machine's circuit for the base
    (raising :class:`SpliceMisfit` when it outgrows the shape or the base). ``machine``: the one the
    user named, refused if it does not fit; None: ``default``, else the published machine,
    said on ``say``."""
    if machine is not None:
        return machine, fit(machine)
    try:
        return default, fit(default)
    except SpliceMisfit as e:
        if default == PUBLISHED_MACHINE:
            raise
        p = PUBLISHED_MACHINE
        say(f"the {machine_name(default)} machine's circuit does not fit this base ({'; '.join(e.misfits)}); "
            f"using the published machine's ({p.max_block_dim} threads per block, {p.mem_words} memory words, "
            f"{p.rom_blocks} ROM blocks)")
        return PUBLISHED_MACHINE, fit(PUBLISHED_MACHINE)
