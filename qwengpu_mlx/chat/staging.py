"""A chat job's smaller form: how a float operation whose one kernel outgrows the machine's
ROM runs as several smaller launches instead, each in the model.

A job carries its form (``KernelJob.staged``), chosen where the job is built from what
it computes, never recognised afterwards by its kernel's name. Each form's ``value``
runs its launches through the evaluator's ``run`` (each result read from its launch's
outputs, a launch that outgrows the ROM staged in turn by its own form) and gives the
operation's value, or None where the form does not fit this machine either: the ROM
refusal then stands. The roundings are the one kernel's: each int converted once
(``cvt.rn.f32.s32``), then the one float operation.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Union

from qwengpu_mlx.core.machine import MachineConfig

if TYPE_CHECKING:  # annotations only: expression.py builds the jobs and imports this module
    from qwengpu_mlx.chat.expression import KernelJob

Run = Callable[["KernelJob"], object]
"""The evaluator's launch of a job: its value (an ``F32`` or int, or a list of them)."""


def float_words(values: list) -> list[str]:
    """Float32 values as launch arguments: their bits as PTX spells them (``0f40200000``)."""
    return [f"0f{x.bits:08X}" for x in values]


@dataclass(frozen=True)
class OneBlock:
    """The same arithmetic as one block of ``n`` threads without the grid's index and guard
    (``kernel``, bound with only the arguments ``keep``): fewer ROM blocks, where the
    machine's block holds the ``n`` elements."""

    kernel: str
    keep: tuple[str, ...]

    def value(self, job: KernelJob, run: Run, machine: MachineConfig):
        n = job.args["n"]
        if n > machine.max_block_dim:
            return None
        return run(replace(job, kernel=self.kernel, args={k: job.args[k] for k in self.keep}, block=n, grid=1,
                           staged=None))


@dataclass(frozen=True)
class IntsConverted:
    """A float operation with an int side: the int argument ``ints`` converted by its own
    launch (``convert``, the ``to_float`` job of some ints), then the float-only ``kernel``
    on the converted words, its result in ``result``; ``then``: that kernel's own smaller
    form, where it outgrows the ROM too."""

    ints: str
    kernel: str
    result: str
    convert: Callable[[list[int]], KernelJob]
    then: Staged | None = None

    def value(self, job: KernelJob, run: Run, machine: MachineConfig):
        words = float_words(run(self.convert(job.args[self.ints])))
        return run(replace(job, kernel=self.kernel, args=dict(job.args, **{self.ints: words}), result=self.result,
                           staged=self.then))


@dataclass(frozen=True)
class MeanOfInts:
    """``mean`` of ints, the float mean: the integer sum of ``x`` by its own launch
    (``add_up``), the sum and the count ``n`` converted by one (``convert``), then their
    float division (``divide``, a job with its own smaller form)."""

    add_up: Callable[[list[int]], KernelJob]
    convert: Callable[[list[int]], KernelJob]
    divide: Callable[[object, object], KernelJob]

    def value(self, job: KernelJob, run: Run, machine: MachineConfig):
        total = run(self.add_up(job.args["x"]))
        converted_total, converted_n = run(self.convert([total, job.args["n"]]))
        return run(self.divide(converted_total, converted_n))


Staged = Union[OneBlock, IntsConverted, MeanOfInts]
