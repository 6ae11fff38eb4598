"""Where circuits come from: an explicit store, with the on-disk cache behind it.

A caller that needs a runner asks a :class:`CircuitStore` for one; the store builds
the circuit once (or loads it from ``circuit_cache``, checked by key and SHA-256) and
keeps it for its own lifetime. Nothing is module-global: a bench or a test that wants
another circuit (a folded plan, a host in front) makes its own runner and passes it to
``runtime.launch``; it never swaps what another caller gets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from qwengpu_mlx.compiler.machine_circuit import NARROW
from qwengpu_mlx.compiler.pipeline import compile_machine
from qwengpu_mlx.core.machine import MachineConfig
from qwengpu_mlx.core.machine_support import check_circuit_supports
from qwengpu_mlx.runtime.circuit_cache import cached_compact
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner
from qwengpu_mlx.runtime.gpu_trust import choose_recurrence
from qwengpu_mlx.runtime.native_runner import packed_runner, save_pack
from qwengpu_mlx.runtime.native_trust import choose_native
from qwengpu_mlx.runtime.recurrent import gated_delta_ops


class CircuitStore:
    """Compiled circuits and their runners, per machine, built on first use."""

    def __init__(self, directory: Path | None = None, log: Callable[[str], None] | None = None,
                 kernel=None, warn: Callable[[str], None] | None = None, native=None):
        self.directory = directory  # None: circuit_cache.cache_dir()
        self.log = log
        self.kernel = kernel  # a GPU recurrence to try (default: mlx-lm's on Metal); see gpu_trust
        self.warn = warn  # where a refused kernel's one-line warning goes (default stderr)
        self.native = native  # None: the built native step once it passed its probe; False: never; else a stand-in
        self._compiled: dict = {}  # (machine, shape) -> compiler.pipeline.CompiledMachine
        self._runners: dict = {}  # machine -> CircuitRunner

    def compiled(self, machine: MachineConfig, shape=None):
        """The compiled machine at ``shape`` (default: the circuit's own narrow shape)."""
        key = (machine, repr(shape or NARROW))  # shapes are not hashable
        if key not in self._compiled:  # compile_machine refuses an unsupported machine first
            self._compiled[key] = compile_machine(machine, shape or NARROW)
        return self._compiled[key]

    def machine_circuit(self, machine: MachineConfig):
        """The compiler's full description of the machine's circuit (layout, plan, gates)."""
        return self.compiled(machine).circuit

    def compact(self, machine: MachineConfig):
        """The compact circuit: from the on-disk cache when it checks out, else compiled."""

        self._check_supported(machine)
        return cached_compact(machine, lambda: self.compiled(machine).compact(), directory=self.directory,
                              log=self.log)

    def runner(self, machine: MachineConfig):
        """The runner launches on ``machine`` use: built once per store. Where the native
        step runs, from its cached pack when there is one (``native_runner``: no circuit
        to load), else over the compact circuit, whose native pack is then cached."""
        if machine not in self._runners:
            self._runners[machine] = self._packed(machine) or self._built(machine)
        return self._runners[machine]

    def _packed(self, machine: MachineConfig):
        if self.native is not None or self.kernel is not None:  # a stand-in or a kernel to judge: the long way
            return None
        self._check_supported(machine)
        return packed_runner(machine, self.directory)

    def _built(self, machine: MachineConfig):
        runner = self.runner_over(self.compact(machine), machine)
        if runner.native is not None and self.native is None:
            try:
                save_pack(runner, machine, self.directory)
            except OSError as e:  # a read-only cache still runs, it just builds next time
                (self.log or (lambda m: None))(f"could not write the native pack ({e})")
        return runner

    def runner_over(self, cc, machine: MachineConfig):
        """A new runner over the compact circuit ``cc`` (e.g. one folded for a base's
        shape), on the recurrence this device has proven (``gpu_trust``) and, on the CPU,
        on the native token step once it passed its probe (``native_trust``)."""

        recurrence = choose_recurrence(cc, machine, kernel=self.kernel, directory=self.directory, warn=self.warn)
        native = None  # a trusted GPU recurrence means the GPU path; the native step is the CPU's
        if self.native is not False and recurrence is gated_delta_ops:
            native = choose_native(cc, machine, warn=self.warn, log=self.log, module=self.native)
        return CircuitRunner(cc, machine, recurrence=recurrence, native=native)

    def has_runner(self, machine: MachineConfig) -> bool:
        """Whether :meth:`runner` returns at once (no build, no cache read)."""
        return machine in self._runners

    @staticmethod
    def _check_supported(machine: MachineConfig) -> None:
        """Refuse a machine the circuit cannot build before any cache read or weight."""
        check_circuit_supports(machine)
