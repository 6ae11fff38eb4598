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
reference; it reproduces mlx-lm's ``gated_delta_ops`` bit for bit (same op graph, same
``mx.compile`` wrapping; the tests check it) and runs on every device. A GPU kernel
(mlx-lm's maintained ``gated_delta_kernel`` on Apple silicon) has the same contract
(:data:`Recurrence`) and is used only after it passed a probe launch on this device
and these versions (``gpu_trust``); this project ships no kernel of its own.

Shapes (``Hv`` is a multiple of ``Hk``; value head ``h`` uses key head ``h // (Hv/Hk)``):
``q, k: [B, T, Hk, Dk]``, ``v: [B, T, Hv, Dv]``, ``a, b, g, beta: [B, T, Hv]``,
``state: [B, Hv, Dv, Dk]`` float32, ``y: [B, T, Hv, Dv]`` (dtype of ``q``).
"""

from __future__ import annotations

from functools import partial
from typing import Callable, Optional, Tuple

import mlx.core as mx
import mlx.nn as nn

__all__ = [
    "compute_g",
    "gates",
    "Recurrence",
    "normalize_qk",
    "gated_delta_step_ops",
    "gated_delta_ops",
    "gated_delta_update",
]


# --------------------------------------------------------------------------- gates

Recurrence = Callable[..., Tuple[mx.array, mx.array]]
"""A recurrence over ``T`` tokens: ``(q, k, v, g, beta, state) -> (y, new_state)`` with the
shapes of :func:`gated_delta_ops` (the MLX-ops reference every other one must match)."""


@partial(mx.compile, shapeless=True)
def compute_g(A_log: mx.array, a: mx.array, dt_bias: mx.array) -> mx.array:
    """Decay gate ``g = exp(-exp(A_log) * softplus(a + dt_bias))``, float32 [B, T, Hv]."""
    return mx.exp(-mx.exp(A_log.astype(mx.float32)) * nn.softplus(a + dt_bias))


def gates(A_log: mx.array, a: mx.array, b: mx.array, dt_bias: mx.array) -> Tuple[mx.array, mx.array]:
    """``(g, beta)``: the decay and the write strength, as :func:`gated_delta_update` makes them."""
    return compute_g(A_log, a, dt_bias), mx.sigmoid(b)


def normalize_qk(
    q: mx.array, k: mx.array, *, inv_scale: float, eps: float = 1e-6
) -> Tuple[mx.array, mx.array]:
    """L2-normalize ``q`` and ``k`` over ``Dk``; fold the read scale ``Dk**-0.5`` into q.

    ``eps`` is added to ``sum(x^2)`` (reference l2norm); ``mx.fast.rms_norm`` adds its
    eps to ``mean(x^2)``, hence the ``inv_scale**2`` factor. Same ops as mlx-lm.
    """
    rms_eps = eps * inv_scale**2
    q = (inv_scale**2) * mx.fast.rms_norm(q, None, rms_eps)
    k = inv_scale * mx.fast.rms_norm(k, None, rms_eps)
    return q, k


# ------------------------------------------------------------------ MLX-ops path


@mx.compile
def gated_delta_step_ops(
    q: mx.array,
    k: mx.array,
    v: mx.array,
    g: mx.array,
    beta: mx.array,
    state: mx.array,
) -> Tuple[mx.array, mx.array]:
    """One token: ``q, k: [B, H, Dk]``, ``v: [B, H, Dv]``, ``g, beta: [B, H]``,
    ``state: [B, H, Dv, Dk]`` -> ``(y [B, H, Dv], new_state)``. Heads already matched."""
    state = state * g[..., None, None]  # decay
    kv_mem = (state * k[..., None, :]).sum(axis=-1)  # [B, H, Dv]  S k
    delta = (v - kv_mem) * beta[..., None]  # [B, H, Dv]
    state = state + k[..., None, :] * delta[..., None]  # S += delta k^T
    y = (state * q[..., None, :]).sum(axis=-1)  # [B, H, Dv]  S q
    return y.astype(q.dtype), state


def gated_delta_ops(
    q: mx.array,
    k: mx.array,
    v: mx.array,
    g: mx.array,
    beta: mx.array,
    state: Optional[mx.array] = None,
) -> Tuple[mx.array, mx.array]:
    """Sequential recurrence over ``T`` tokens with MLX ops (scalar gate per head)."""
    B, T, Hk, Dk = q.shape
    Hv, Dv = v.shape[-2:]
    if state is None:
        state = mx.zeros((B, Hv, Dv, Dk), dtype=mx.float32)
    if (repeat := Hv // Hk) > 1:
        q = mx.repeat(q, repeat, -2)
        k = mx.repeat(k, repeat, -2)
    ys = []
    for t in range(T):
        y, state = gated_delta_step_ops(q[:, t], k[:, t], v[:, t], g[:, t], beta[:, t], state)
        ys.append(y)
    return mx.stack(ys, axis=1), state


# ---------------------------------------------------------------------- dispatch


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
    """Gates from ``a``/``b``, then the recurrence; returns ``(y, new_state)``.

    ``q``/``k`` must already be normalized (:func:`normalize_qk`). ``state`` defaults
    to float32 zeros ``[B, Hv, Dv, Dk]``.
    """
    beta = mx.sigmoid(b)
    g = compute_g(A_log, a, dt_bias)
    if state is None:
        B, _, _, Dk = q.shape
        Hv, Dv = v.shape[-2:]
        state = mx.zeros((B, Hv, Dv, Dk), dtype=mx.float32)
    if use_kernel:
        raise ValueError("the dense model runs the MLX-ops recurrence; a GPU kernel is chosen by gpu_trust")
    return gated_delta_ops(q, k, v, g, beta, state)
