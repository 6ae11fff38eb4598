"""The Gated DeltaNet recurrence (the "delta rule" with a decay gate).

Per value head ``h`` and token ``t`` the state ``S`` is a float32 matrix of shape
``[Dv, Dk]`` (rows: value dims, columns: key dims), laid out for a batch as
``state[b, h, dv, dk]`` -- exactly mlx-lm's layout (``ArraysCache[1]``). One step::

    S  <- g * S                      # decay, g = exp(-exp(A_log) * softplus(a + dt_bias))
    kv  = S @ k                      # [Dv]: what the key currently reads
    S  <- S + outer(beta * (v - kv), k)   # delta-rule write, beta = sigmoid(b)
    y   = S @ q                      # [Dv]: read after the write

so a write with the one-hot key ``e_j`` (and beta = g = 1) replaces column ``j``,
``S[b, h, :, j] = v``, and a one-hot query ``e_j`` reads that column back (times
whatever scale ``q`` carries; ``normalize_qk`` folds ``Dk**-0.5`` into ``q``).

:func:`gated_delta_ops` -- plain MLX ops, one compiled step per token -- is the
reference: it is mlx-lm's own ``gated_delta_ops`` (as are :func:`compute_g` and
:func:`gated_delta_step_ops`), and it runs on every device. Kept here: :func:`gates`, the
:data:`Recurrence` contract, :func:`normalize_qk` with Qwen3.5's eps as its default, and
:func:`gated_delta_update` pinned to the ops. A GPU kernel
(mlx-lm's maintained ``gated_delta_kernel`` on Apple silicon) has the same contract
(:data:`Recurrence`) and is used only after it passed a probe launch on this device
and these versions (``gpu_trust``); this project ships no kernel of its own.

Shapes (``Hv`` is a multiple of ``Hk``; value head ``h`` uses key head ``h // (Hv/Hk)``):
``q, k: [B, T, Hk, Dk]``, ``v: [B, T, Hv, Dv]``, ``a, b, g, beta: [B, T, Hv]``,
``state: [B, Hv, Dv, Dk]`` float32, ``y: [B, T, Hv, Dv]`` (dtype of ``q``).
"""

from __future__ import annotations

from typing import Callable, Optional, Tuple

import functools
import importlib

import mlx.core as mx

__all__ = [
    "compute_g",
    "gates",
    "Recurrence",
    "normalize_qk",
    "gated_delta_step_ops",
    "gated_delta_ops",
    "gated_delta_update",
    "precise_swiglu",
]


@functools.cache
def _mlx_lm():
    """mlx-lm's ``gated_delta`` module, imported on first use.

    Why not at the top: importing any mlx_lm module runs its package's ``__init__``, which
    imports transformers: about 1.5 s of every launch's start-up on an idle 2-core CPU (5 s
    and more on a loaded one), where a launch on a CPU runs the native step and needs none
    of it. The MLX-ops path (the trust probes, a device without the native step) imports it
    at its first call."""
    return importlib.import_module("mlx_lm.models.gated_delta")


def compute_g(A_log: mx.array, a: mx.array, dt_bias: mx.array) -> mx.array:
    """mlx-lm's ``compute_g``: the decay ``exp(-exp(A_log) * softplus(a + dt_bias))``."""
    return _mlx_lm().compute_g(A_log, a, dt_bias)


def gated_delta_ops(q: mx.array, k: mx.array, v: mx.array, g: mx.array, beta: mx.array,
                    state: Optional[mx.array] = None, mask: Optional[mx.array] = None) -> Tuple[mx.array, mx.array]:
    """mlx-lm's ``gated_delta_ops``: the MLX-ops recurrence over ``T`` tokens, the reference."""
    return _mlx_lm().gated_delta_ops(q, k, v, g, beta, state, mask)


def gated_delta_step_ops(q: mx.array, k: mx.array, v: mx.array, g: mx.array, beta: mx.array, state: mx.array,
                         mask: Optional[mx.array] = None) -> Tuple[mx.array, mx.array]:
    """mlx-lm's one-token MLX-ops step."""
    return _mlx_lm()._gated_delta_step_ops(q, k, v, g, beta, state, mask)


def precise_swiglu(h: mx.array, gate: mx.array, x: mx.array) -> mx.array:
    """mlx-lm's ``precise_swiglu`` (silu(gate) * x in float32, in ``h``'s dtype), imported on
    first use for the same start-up reason as :func:`_mlx_lm`."""
    return _mlx_lm_activations().precise_swiglu(h, gate, x)


@functools.cache
def _mlx_lm_activations():
    """mlx-lm's ``activations`` module, imported on first use (see :func:`_mlx_lm`)."""
    return importlib.import_module("mlx_lm.models.activations")


Recurrence = Callable[..., Tuple[mx.array, mx.array]]
"""A recurrence over ``T`` tokens: ``(q, k, v, g, beta, state) -> (y, new_state)`` with the
shapes of :func:`gated_delta_ops` (the MLX-ops reference every other one must match)."""


def gates(A_log: mx.array, a: mx.array, b: mx.array, dt_bias: mx.array) -> Tuple[mx.array, mx.array]:
    """``(g, beta)``: the decay and the write strength, as :func:`gated_delta_update` makes them.

    mlx-lm makes both only inside its update; a :data:`Recurrence` takes them made."""
    return compute_g(A_log, a, dt_bias), mx.sigmoid(b)


def normalize_qk(
    q: mx.array, k: mx.array, *, inv_scale: float, eps: float = 1e-6
) -> Tuple[mx.array, mx.array]:
    """mlx-lm's ``normalize_qk`` (L2 over ``Dk``, the read scale ``Dk**-0.5`` folded into q),
    with Qwen3.5's eps ``1e-6`` as the default (mlx-lm's has none)."""
    return _mlx_lm().normalize_qk(q, k, inv_scale=inv_scale, eps=eps)


def gated_delta_update(
    q: mx.array,
    k: mx.array,
    v: mx.array,
    a: mx.array,
    b: mx.array,
    A_log: mx.array,
    dt_bias: mx.array,
    state: Optional[mx.array] = None,
    *,
    use_kernel: bool = False,
) -> Tuple[mx.array, mx.array]:
    """mlx-lm's ``gated_delta_update`` (gates from ``a``/``b``, then the recurrence; returns
    ``(y, new_state)``), pinned to the MLX-ops recurrence.

    mlx-lm's defaults to its Metal kernel on Apple silicon; here the ops run on every device
    and a kernel is chosen only by ``gpu_trust`` after its probe. ``q``/``k`` must already be
    normalized (:func:`normalize_qk`); ``state`` defaults to float32 zeros ``[B, Hv, Dv, Dk]``.
    """
    if use_kernel:
        raise ValueError("the dense model runs the MLX-ops recurrence; a GPU kernel is chosen by gpu_trust")
    return _mlx_lm().gated_delta_update(q, k, v, a, b, A_log, dt_bias, state, use_kernel=False)
