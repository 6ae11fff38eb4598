"""Write a combined checkpoint: a base Qwen3.5 model with the machine's circuit spliced in.

Pipeline (each stage takes data and returns data): the base's config -> the fit check
(``layout.splice_misfits``, before any weight is read) -> what it will write and what
unmodified mlx-lm will need (``sizes.estimate``, said before anything is written) ->
the circuit's wide dims (``weights.wide_columns``) -> the base's tensors through
mlx-lm's own loader -> the launch rows' shared part from calibration text
(``logits.suppression_row``) -> the combined tensors (``weights.combined_shards``),
written one layer at a time -> config.json, the extended tokenizer, the manifest.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import mlx.core as mx
from mlx.utils import tree_flatten
from mlx_lm.utils import load

from qwengpu_mlx.core.machine import MACHINES, PUBLISHED_MACHINE, MachineConfig, machine_name
from qwengpu_mlx.runtime.checkpoint import atomic_directory, check_output_dir

from qwengpu_mlx.splice.layout import SpliceLayout, splice_misfits, text_config
from qwengpu_mlx.splice.logits import Suppression, suppression_row
from qwengpu_mlx.splice.reporting import Progress, no_progress
from qwengpu_mlx.splice.sizes import estimate
from qwengpu_mlx.splice.storage import StorageTally, compact_circuit, quantization_entry
from qwengpu_mlx.splice.weights import combined_shards, launch_row_as_held, wide_columns

SPLICE_RECORD = "qwengpu-splice.json"  # what the splice did; provenance is source.py's manifest

RECORDED_ALIASES = {"default": PUBLISHED_MACHINE}
"""Names older checkpoints recorded that are no machine's own: ``default`` was written while
it meant the published machine, and keeps meaning it whatever the default is now."""


def recorded_name(name: str) -> str:
    """The name a checkpoint records for the machine ``name`` names: its own name, never the
    ``default`` alias, so that it opens as the machine it was built for after the default moves."""
    return machine_name(MACHINES[name], name) if name in MACHINES else name


def recorded_config(name: str) -> MachineConfig | None:
    """The machine a checkpoint's recorded ``name`` means (None: no machine of this version)."""
    return RECORDED_ALIASES[name] if name in RECORDED_ALIASES else MACHINES.get(name)


class SpliceMisfit(ValueError):
    """The circuit does not fit the base; ``misfits`` names each size."""

    def __init__(self, misfits: list[str]):
        self.misfits = misfits
        super().__init__("the circuit does not fit this base: " + "; ".join(misfits))


class SpliceTooLarge(ValueError):
    """The dense combined checkpoint would hold more parameters than allowed."""

    def __init__(self, parameters: int, limit: float):
        self.parameters, self.limit = parameters, limit
        super().__init__(
            f"the dense combined checkpoint holds {parameters:,} parameters, over --max-params {int(limit):,}. Its "
            f"residual is 4x the base's hidden size so that text and launches never share a dim; most of those "
            f"parameters are zeros, stored as the base stores its own and, in the circuit's layers, in the smallest "
            f"exact format (the size model, splice/sizes.py: about 22 GB for Qwen3.5-2B in bfloat16, 11 GB "
            f"from its 4-bit conversion); pass a larger --max-params to write it")


@dataclass(frozen=True)
class BuildReport:
    out: Path
    layout: SpliceLayout
    suppression: Suppression
    shards: int
    bytes: int
    seconds: float
    storage: StorageTally = field(default_factory=StorageTally)  # the circuit matrices' formats


def check_fits(base_config: dict, circuit_config: dict) -> None:
    """Raise :class:`SpliceMisfit` unless the circuit fits the base's sizes."""
    misfits = splice_misfits(text_config(base_config), circuit_config)
    if misfits:
        raise SpliceMisfit(misfits)


def load_base(path: Path):
    """(mlx-lm model, tokenizer) of a base directory, through mlx-lm's own loader."""
    return load(str(path))


def _write_shards(out: Path, shards, count: int, log: Callable[[str], None],
                  progress: Progress = no_progress) -> tuple[dict, int]:
    """Each part as ``model-0000k-of-0000n.safetensors``; the weight map and bytes written.
    ``progress`` hears each shard as it is written (a shard is one layer: seconds to a minute)."""
    weight_map, written = {}, 0
    progress("writing the combined checkpoint's shards", 0, count)
    for k, part in enumerate(shards):
        name = f"model-{k + 1:05d}-of-{count:05d}.safetensors"
        mx.eval(part)
        mx.save_safetensors(str(out / name), part, metadata={"format": "mlx"})
        weight_map.update({key: name for key in part})
        written += sum(v.nbytes for v in part.values())
        log(f"wrote {name} ({len(part)} tensors)")
        progress("writing the combined checkpoint's shards", k + 1, count)
    return weight_map, written


def write_combined(out: Path, base_model, base_config: dict, circuit_plan, launch_vocab: list[str],
                   calibration: list[int], *, machine_name: str = "", log: Callable[[str], None] = lambda s: None,
                   force: bool = False, progress: Progress = no_progress) -> BuildReport:
    """Splice ``circuit_plan`` into ``base_model`` and write the combined weights, config and
    splice record (``SPLICE_RECORD``, which our runner reads back).

    Atomically: everything goes into a temporary directory beside ``out`` that is renamed
    to ``out`` at the end (``checkpoint.atomic_directory``), so an interrupt or a failure
    leaves no half-written checkpoint; a non-empty ``out`` is refused (before any work)
    unless ``force``. ``progress(what, done, total)`` hears the calibration's chunks and
    each shard written. The tokenizer and the provenance manifest are the caller's
    (``tokenizer.extend_tokenizer``, ``source.write_manifest``)."""
    start = time.perf_counter()
    check_output_dir(out, force=force)
    check_fits(base_config, circuit_plan.config())
    lay = SpliceLayout(text_config(base_config), circuit_plan.config(), len(launch_vocab))
    log("size model: " + estimate(base_config, lay.circuit_layers, len(launch_vocab)).line())
    base = dict(tree_flatten(base_model.parameters()))
    sup = suppression_row(base_model, calibration, len(launch_vocab), represent=launch_row_as_held(base, lay),
                          progress=progress)
    log(f"launch rows' shared part: alpha {sup.alpha:.3g} (smallest projection {sup.min_projection:.3g} "
        f"over {sup.positions} calibration positions; launch mass at most {sup.target:g}, "
        f"{sup.margin:.1f} nats to spare)")
    count = 1 + lay.base_layers + lay.circuit_layers
    tally = StorageTally()
    wide = wide_columns(circuit_plan.weight_shards())
    shards = compact_circuit(combined_shards(base, circuit_plan.weight_shards(), mx.array(sup.stored), lay, wide),
                             lay.base_layers, tally)
    with atomic_directory(out, force=force) as tmp:
        written = _write_files(tmp, shards, count, lay, base_config, tally, log, progress)
        log(tally.summary())
        report = BuildReport(out, lay, sup, count, written, time.perf_counter() - start, tally)
        (tmp / SPLICE_RECORD).write_text(json.dumps(splice_record(report, machine_name), indent=2) + "\n")
    return report


def _write_files(out: Path, shards, count: int, lay: SpliceLayout, base_config: dict, tally: StorageTally,
                 log: Callable[[str], None], progress: Progress = no_progress) -> int:
    """The shards, their index and config.json into ``out``; the bytes of weights written."""
    weight_map, written = _write_shards(out, shards, count, log, progress)
    (out / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"format": "mlx", "total_size": written}, "weight_map": dict(sorted(weight_map.items()))},
                   indent=2) + "\n")
    config = {**lay.config(base_config), **quantization_entry(base_config, tally)}
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return written


def splice_record(report: BuildReport, machine_name: str) -> dict:
    """What the manifest records about the splice (our runner reads it back)."""
    lay = report.layout
    return {"machine": recorded_name(machine_name), "base_text_config": lay.base, "circuit_config": lay.circuit,
            "launch_tokens": lay.launch_tokens, "first_launch_id": lay.launch_id(0),
            "suppression": {"alpha": report.suppression.alpha, "min_projection": report.suppression.min_projection,
                            "target": report.suppression.target, "positions": report.suppression.positions,
                            "margin_nats": round(report.suppression.margin, 3)},
            "circuit_storage": {"matrices": dict(report.storage.matrices), "bytes": dict(report.storage.nbytes)}}
