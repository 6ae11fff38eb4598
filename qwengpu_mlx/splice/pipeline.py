"""``qwengpu-mlx build --base``: from a repo id or directory to a combined checkpoint.

acquire the base (``source``: config first, the fit check before any weight) -> mlx-lm
loads it -> calibration text through its tokenizer -> ``build.write_combined`` -> the
base tokenizer extended with the launch tokens (``tokenizer``) -> the provenance
manifest (``source.write_manifest``). Every refusal is a typed error the CLI prints.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Callable

import mlx.core as mx
from mlx.utils import tree_flatten

from qwengpu_mlx.compiler.sizing import QWEN35_2B
from qwengpu_mlx.core.machine import machine_name as own_name
from qwengpu_mlx.runtime import CircuitStore

from qwengpu_mlx.splice.build import SpliceTooLarge, check_fits, load_base, recorded_name, write_combined
from qwengpu_mlx.splice.folded import compiled_for_splice
from qwengpu_mlx.splice.layout import WIDTH_FACTOR, SpliceLayout, shape_sizes, text_config
from qwengpu_mlx.splice.machine_choice import fitting_machine, named_machine
from qwengpu_mlx.splice.reporting import Progress, no_progress
from qwengpu_mlx.splice.source import acquire, write_manifest
from qwengpu_mlx.splice.tokenizer import extend_tokenizer
from qwengpu_mlx.splice.weights import PREFIX, tensor_role


def calibration_text() -> str:
    """The shipped public-domain calibration text (not the drift sample)."""
    return resources.files("qwengpu_mlx.splice").joinpath("texts/calibration.txt").read_text(encoding="utf-8")


def sample_text() -> str:
    """The shipped public-domain text on which drift and launch mass are measured."""
    return resources.files("qwengpu_mlx.splice").joinpath("texts/sample.txt").read_text(encoding="utf-8")


def _circuit_layer_parameters(lay: SpliceLayout, linear: bool) -> int:
    b, H = lay.base, lay.hidden
    inter = b["intermediate_size"]
    mlp = 3 * inter * H + 2 * H
    if not linear:
        D, Hq, KV = b["head_dim"], b["num_attention_heads"], b["num_key_value_heads"]
        return mlp + (2 * Hq * D + 2 * KV * D) * H + H * Hq * D + 2 * D
    Hk, Hv = b["linear_num_key_heads"], b["linear_num_value_heads"]
    Dk, Dv, K = b["linear_key_head_dim"], b["linear_value_head_dim"], b["linear_conv_kernel_dim"]
    qkv = 2 * Hk * Dk + Hv * Dv
    return mlp + qkv * H + Hv * Dv * H + 2 * Hv * H + H * Hv * Dv + qkv * K + 2 * Hv + Dv


def combined_parameters(lay: SpliceLayout, base_model) -> int:
    """Parameters of the dense combined checkpoint (what ``build`` would write)."""
    modules = dict(base_model.named_modules())
    total = 0
    for name, p in tree_flatten(base_model.parameters()):
        module, kind = name.rsplit(".", 1)
        if kind in ("scales", "biases"):
            continue  # a quantized matrix counts its weights once, below
        size = p.size * 32 // modules[module].bits if p.dtype == mx.uint32 else p.size
        grows = tensor_role(name) != "own" or name in (PREFIX + "embed_tokens.weight", PREFIX + "norm.weight")
        total += size * (WIDTH_FACTOR if grows else 1)
    total += lay.launch_tokens * lay.hidden
    interval = int(lay.base.get("full_attention_interval", 4))
    for j in range(lay.circuit_layers):
        total += _circuit_layer_parameters(lay, (lay.base_layers + j + 1) % interval != 0)
    return total


def _machine_plan(name: str, log: Callable[[str], None], progress: Progress):
    """(machine, its circuit plan at Qwen3.5-2B's shape): the machine ``name`` names, or
    for ``default`` the default machine when its circuit fits the shape, else the published
    one (``machine_choice``; said on ``log``)."""
    store = CircuitStore()

    def plan_of(machine):
        what = f"compiling the {own_name(machine)} machine's circuit at Qwen3.5-2B's shape"
        log(what)
        progress(what, 0, 0)
        return compiled_for_splice(store, machine).plan

    return fitting_machine(named_machine(name), plan_of, say=log)


def build_from_base(base: str, out: Path, machine_name: str, *, revision: str | None = None,
                    max_params: float = float("inf"), plan=None, log: Callable[[str], None] = print,
                    progress: Progress = no_progress):
    """The whole ``build --base`` pipeline; returns the write's ``BuildReport``.

    ``machine_name``: a name in ``MACHINES``; ``default`` is the default machine when its
    circuit fits Qwen3.5-2B's shape, else the published one (``machine_choice``), and the
    checkpoint records the machine's own name either way.
    ``plan``: the circuit plan to splice (default: the machine's, folded at Qwen3.5-2B's
    shape); a small plan makes the whole pipeline testable at a small size.
    ``progress(what, done, total)`` hears every phase (``total`` 0: no count) and every
    counted step: calibration chunks, shards written."""
    sizes = plan.config() if plan is not None else shape_sizes(QWEN35_2B)
    progress(f"the base {base}: config, fit check, files", 0, 0)
    src = acquire(base, revision=revision, fits=lambda cfg: check_fits(cfg, sizes))
    if plan is None:
        machine, plan = _machine_plan(machine_name, log, progress)
        machine_name = own_name(machine)
    else:
        machine_name = recorded_name(machine_name)  # its own name: "default" would change meaning with the default
    circuit_cfg = plan.config()
    log(f"base {src.repo_id or src.path} ({src.revision or 'local directory'}): loading with mlx-lm")
    progress("loading the base with mlx-lm", 0, 0)
    model, tokenizer = load_base(src.path)
    lay = SpliceLayout(text_config(src.config), circuit_cfg, len(plan.vocab))
    n = combined_parameters(lay, model)
    if n > max_params:
        raise SpliceTooLarge(n, max_params)
    calibration = tokenizer.encode(calibration_text())
    report = write_combined(out, model, src.config, plan, list(plan.vocab), calibration,
                            machine_name=machine_name, log=log, progress=progress)
    progress("the tokenizer and the manifest", 0, 0)
    extend_tokenizer(src.path, out, list(plan.vocab), lay.launch_id(0))
    write_manifest(src, out, {"machine": machine_name, "parameters": n, "bytes": report.bytes,
                              "build_seconds": round(report.seconds, 1)})
    return report
