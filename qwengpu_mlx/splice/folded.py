"""The machine's circuit folded at Qwen3.5-2B's shape, kept in the circuit cache across runs.

Every base splices the same folded circuit (its plan's config and its compact weights),
so compiling it once per process (about 45 s on a 2-core CPU, the schedule and the fold)
is wasted after the first run: the compact circuit goes into ``circuit_cache`` under a key
of machine, shape, levels and compiler source (so a compiler change rebuilds it), with
the plan's config in a small JSON file beside it. A hit loads both in about a second.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from qwengpu_mlx.compiler.levels import DEFAULT_LEVELS
from qwengpu_mlx.compiler.sizing import QWEN35_2B, DoesNotFit
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, MachineConfig, machine_name
from qwengpu_mlx.runtime.circuit_cache import cache_dir, cached_compact, circuit_key, write_atomically
from qwengpu_mlx.splice.build import SpliceMisfit


@dataclass
class FoldedCircuit:
    """What a splice needs of the folded circuit."""

    config: dict  # the circuit plan's text config (``CircuitPlan.config()``); vocab_size = launch tokens
    compact: object  # compiler.compact.CompactCircuit at that shape

    @property
    def launch_tokens(self) -> int:
        return int(self.config["vocab_size"])


def _key(machine: MachineConfig) -> str:
    return circuit_key(machine, QWEN35_2B, DEFAULT_LEVELS)


def _config_path(key: str, directory: Path | None) -> Path:
    return (directory or cache_dir()) / f"folded-{key[:16]}.json"


def _read_config(path: Path, key: str) -> dict | None:
    """The plan config cached under ``key``; None when missing or not this key's."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key or not isinstance(data.get("config"), dict):
        return None
    return data["config"]


def folded_circuit(store, machine: MachineConfig) -> FoldedCircuit:
    """The folded circuit from the cache, or compiled (through ``store``) and cached."""
    key = _key(machine)
    path = _config_path(key, store.directory)
    config = _read_config(path, key)
    if config is None:
        config = compiled_for_splice(store, machine).plan.config()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, lambda name: Path(name).write_text(json.dumps({"key": key, "config": config})))
        except OSError:  # a read-only cache still runs; it compiles again next time
            pass
    compact = cached_compact(machine, lambda: compiled_for_splice(store, machine).compact(),
                             directory=store.directory, log=store.log, key=key)
    return FoldedCircuit(config, compact)


def compiled_for_splice(store, machine: MachineConfig):
    """The circuit compiled at Qwen3.5-2B's shape, or SpliceMisfit naming the machine and
    what it outgrows (a refusal for a person, never the compiler's traceback)."""
    try:
        return store.compiled(machine, QWEN35_2B)
    except DoesNotFit as e:
        name = machine_name(machine, "chosen")
        hint = "" if machine == PUBLISHED_MACHINE else " (the published machine's circuit fits it: --machine published)"
        raise SpliceMisfit([f"the {name} machine's circuit needs more than Qwen3.5-2B's shape has: {e}{hint}"]) \
            from None
