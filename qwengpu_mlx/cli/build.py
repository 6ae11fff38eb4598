"""``qwengpu-mlx build``: the circuit as a standard Qwen3.5 checkpoint, dense (folded onto
a shape) or spliced into a base model (``--base``), written atomically."""

from __future__ import annotations

from pathlib import Path

from qwengpu_mlx.cli import progress
from qwengpu_mlx.cli.common import errors_as
from qwengpu_mlx.cli.refusals import splice_errors
from qwengpu_mlx.compiler.sizing import QWEN35_2B, DoesNotFit, dense_parameters, needs
from qwengpu_mlx.core.errors import LaunchError, ModelError, OutputError
from qwengpu_mlx.core.machine import MACHINES, PUBLISHED_MACHINE, machine_name
from qwengpu_mlx.core.vocab import vocab_for
from qwengpu_mlx.runtime import CircuitStore
from qwengpu_mlx.runtime.checkpoint import atomic_directory, check_output_dir, save_checkpoint
from qwengpu_mlx.splice import pipeline


def _build_base(ns) -> int:
    """``build --base``: the circuit spliced into a base Qwen3.5 checkpoint (``splice.pipeline``);
    each phase (loading, calibration by chunks, each shard) on the live line on stderr."""
    if ns.shape is not None:
        raise LaunchError("--shape does not apply with --base: the combined checkpoint takes the base's sizes")
    out = Path(ns.out)
    # the pipeline writes weights, then the tokenizer and manifest: all of it into one temporary
    # directory that becomes --out at the end, so Ctrl-C or a refusal leaves nothing half-written
    with splice_errors("build --base"), _write_errors(out), progress.display(ns) as shown, \
            atomic_directory(out, force=ns.force) as tmp:
        report = pipeline.build_from_base(ns.base, tmp, ns.machine, revision=ns.revision, max_params=ns.max_params,
                                          progress=shown.counted)
    lay = report.layout
    print(f"wrote {out}: {lay.base_layers} base + {lay.circuit_layers} circuit layers, hidden {lay.hidden:,} "
          f"({lay.base_hidden:,} base dims x2 scale, circuit at {lay.circuit_offset:,}), {lay.launch_tokens:,} launch "
          f"tokens from id {lay.launch_id(0):,}; {report.bytes / 1e9:.1f} GB in {report.shards} shards, "
          f"{report.seconds:.0f} s")
    return 0


def _write_errors(out):
    """``build``'s OSErrors (an unwritable place, a full disk) as this CLI's errors, naming the path."""
    return errors_as(OSError, lambda e: OutputError(
        f"build --out {out}: cannot read or write {e.filename or out}: {e.strerror or e}"))


def _fitting_hint(machine) -> str:
    """Where the circuit outgrows the shape, the machine whose circuit fits it."""
    return "" if machine == PUBLISHED_MACHINE else "\n  (the published machine's circuit fits it: --machine published)"


def build_shape(ns) -> str:
    """``build``'s shape: --shape, else Qwen3.5-2B's (the narrow circuit is far over
    --max-params as a dense checkpoint: a default that cannot be written is no default)."""
    return ns.shape or "qwen3.5-2b"


def run(ns) -> int:
    """Write the circuit as a dense checkpoint, or say exactly why it cannot be written."""
    check_output_dir(Path(ns.out), force=ns.force)  # before any work: refusals are cheap
    if ns.base:
        return _build_base(ns)
    shape = build_shape(ns)

    machine = MACHINES[ns.machine]
    store = CircuitStore()
    if shape == "qwen3.5-2b":
        # values folded onto 2048 physical dims, MLPs and heads spread to the shape's widths
        try:
            with progress.phase(ns, "compiling the circuit for the Qwen3.5-2B shape"):
                compiled = store.compiled(machine, QWEN35_2B)
        except DoesNotFit as e:
            s = QWEN35_2B
            raise ModelError(f"the circuit of the {machine_name(machine)} machine does not fit the Qwen3.5-2B shape "
                                f"(hidden {s.hidden}, intermediate {s.intermediate}, {s.linear_heads} linear "
                                f"heads of {s.key_dim} x {s.value_dim}):\n  {e}{_fitting_hint(machine)}") from None
        reuse = compiled.reuse
        note = f"; {reuse.logical} values on {reuse.physical} residual dims, {reuse.clear_gates} clear gates"
    else:
        with progress.phase(ns, "compiling the circuit"):
            compiled, note = store.compiled(machine), ""
    plan = compiled.plan
    n = needs(compiled.circuit.plan)
    dense = dense_parameters(plan.shape, len(plan.layers), len(plan.vocab))
    if dense > ns.max_params:
        raise ModelError(
            f"a dense checkpoint of the circuit at shape {shape} holds {dense:,} parameters "
            f"({dense * 4 / 1e12:.1f} TB as float32), over --max-params {int(ns.max_params):,}. The circuit "
            f"allocates {n.dims_used} residual dims (at least {n.reuse_bound} with every dead dim reused) and "
            f"uses up to {n.units_max} MLP units and {n.heads_max} linear heads in one layer; a Qwen3.5 "
            f"checkpoint is dense with equal layers. `qwengpu-mlx run` executes the same weights through the "
            f"compact path; --shape qwen3.5-2b (the default) folds the residual for a dense checkpoint.")
    eos = plan.vocab[vocab_for(machine).id("STOP")]  # the launch's last token: mlx-lm stops there
    with _write_errors(ns.out), progress.phase(ns, f"writing {ns.out}"):  # atomic: a temporary directory
        out = save_checkpoint(Path(ns.out), plan.config(), plan.weight_shards(), plan.vocab, eos_token=eos,
                              shards=1 + len(plan.layers), force=ns.force)  # renamed at the end; one layer dense at a time
    print(f"wrote {out} ({dense:,} parameters, {len(plan.layers)} layers{note})")
    return 0
