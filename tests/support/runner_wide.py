"""Fast execution of a compiled circuit: only the dims, heads and units each layer uses.

The same operations as the dense Qwen3.5 model (``model.py``, mlx-lm): full-width
RMSNorm, SwiGLU, causal conv1d + SiLU, normalize_qk, the gated delta recurrence
(``recurrent.py``), the gated RMSNorm; restricted to the non-zero parts of each
layer, so skipped terms are exact zeros. Full-attention layers of the circuit are
inert (zero output projection) and skipped. Reductions over fewer terms may round
differently in the last bit; the circuit's margins make the tokens identical, and a
test compares this path with the dense model.
"""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from mlx_lm.models.activations import precise_swiglu

from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, MachineConfig
from qwengpu_mlx.runtime.recurrent import gated_delta_update, normalize_qk


class _Layer:
    def __init__(self, cl):
        self.norm_in = mx.array(cl.norm_in)
        self.norm_post = mx.array(cl.norm_post)
        self.mixer = None
        if cl.mixer is not None:
            mz = cl.mixer
            self.mixer = {
                "inputs": mx.array(mz.inputs.astype(np.int32)),
                "qkv_t": mx.array(mz.qkv.T.copy()),
                "conv": mx.array(mz.conv),
                "z_t": mx.array(mz.z.T.copy()),
                "b_t": mx.array(mz.b.T.copy()),
                "a_t": mx.array(mz.a.T.copy()),
                "dt_bias": mx.array(mz.dt_bias),
                "A_log": mx.array(mz.A_log),
                "norm": mx.array(mz.norm),
                "outputs": mx.array(mz.outputs.astype(np.int32)),
                "out_t": mx.array(mz.out.T.copy()),
                "H": len(mz.heads), "Dk": mz.Dk, "Dv": mz.Dv, "heads": list(mz.heads),
            }
        self.mlp = None
        if cl.mlp is not None:
            ml = cl.mlp
            # the circuit's up projection reads one dim (ONE) with one weight for every unit:
            # then up(x) is that dim times the weight, exactly (the other terms are 0 * x)
            nz_cols = np.nonzero(np.any(ml.up != 0, axis=0))[0]
            vals = np.unique(ml.up[:, nz_cols[0]]) if len(nz_cols) == 1 else None
            self.mlp = {
                "inputs": mx.array(ml.inputs.astype(np.int32)),
                "gate_t": mx.array(ml.gate.T.copy()),
                "up_t": mx.array(ml.up.T.copy()),
                "up_col": int(nz_cols[0]) if vals is not None and len(vals) == 1 else None,
                "up_val": float(vals[0]) if vals is not None and len(vals) == 1 else None,
                "outputs": mx.array(ml.outputs.astype(np.int32)),
                "down_t": mx.array(ml.down.T.copy()),
            }


class WideCircuitRunner:
    """Runs a :class:`compiler.compact.CompactCircuit`; keeps per-layer recurrent state.

    Implements the launch runtime's runner interface (``runtime/runner.py``). ``front``:
    a HostFront whose hidden states share the residual (robustness runs)."""

    def __init__(self, cc, machine: MachineConfig = PUBLISHED_MACHINE, front=None):
        self.machine = machine
        self.hidden = cc.hidden
        self.eps = cc.eps
        self.embedding = mx.array(cc.embedding)  # [V, |embedding_dims|]
        self.embedding_dims = mx.array(cc.embedding_dims.astype(np.int32))
        self.final_norm = mx.array(cc.final_norm)
        self.out_dims = mx.array(cc.out_dims.astype(np.int32))
        col = {int(d): i for i, d in enumerate(cc.embedding_dims)}
        self.emb_out = mx.array(cc.embedding[:, [col[int(d)] for d in cc.out_dims]].T.copy())  # [|out|, V]
        self.layers = [_Layer(cl) for cl in cc.layers]
        self.one, self.K, self.gain, self.delta = cc.one, cc.K, cc.gain, cc.delta
        self.memory_heads = cc.memory_heads
        self.track_margins = False
        self.front = front
        self.reset()

    def reset(self) -> None:
        if self.front is not None:
            self.front.reset()
        self.conv_state = [None] * len(self.layers)
        self.state = [None] * len(self.layers)
        self.min_margin = float("inf")  # smallest gate margin seen, in bits (0.5 is ideal)

    # -- one layer

    def _mix(self, L: int, x: mx.array) -> mx.array:
        lay = self.layers[L]
        mz = lay.mixer
        T = x.shape[0]
        xn = mx.fast.rms_norm(x, lay.norm_in, self.eps)
        xi = mx.take(xn, mz["inputs"], axis=1)
        qkv = xi @ mz["qkv_t"]  # [T, C]
        C = qkv.shape[1]
        prev = self.conv_state[L]
        if prev is None:
            prev = mx.zeros((3, C), dtype=qkv.dtype)
        ci = mx.concatenate([prev, qkv], axis=0)  # [T+3, C]
        self.conv_state[L] = ci[-3:]
        w = mz["conv"]  # [C, 4]
        conv = ci[0:T] * w[:, 0] + ci[1:T + 1] * w[:, 1] + ci[2:T + 2] * w[:, 2] + ci[3:T + 3] * w[:, 3]
        conv = nn.silu(conv)
        H, Dk, Dv = mz["H"], mz["Dk"], mz["Dv"]
        q = conv[:, : H * Dk].reshape(1, T, H, Dk)
        k = conv[:, H * Dk: 2 * H * Dk].reshape(1, T, H, Dk)
        v = conv[:, 2 * H * Dk:].reshape(1, T, H, Dv)
        z = (xi @ mz["z_t"]).reshape(1, T, H, Dv)
        b = (xi @ mz["b_t"]).reshape(1, T, H)
        a = (xi @ mz["a_t"]).reshape(1, T, H)
        q, k = normalize_qk(q, k, inv_scale=Dk ** -0.5, eps=1e-6)
        y, self.state[L] = gated_delta_update(q, k, v, a, b, mz["A_log"], mz["dt_bias"], self.state[L])
        o = precise_swiglu(y, z, mx.fast.rms_norm(y, mz["norm"], self.eps))
        o = o.reshape(T, H * Dv) @ mz["out_t"]
        return x.at[:, mz["outputs"]].add(o)

    def _ffn(self, L: int, h: mx.array) -> mx.array:
        lay = self.layers[L]
        ml = lay.mlp
        hn = mx.fast.rms_norm(h, lay.norm_post, self.eps)
        hi = mx.take(hn, ml["inputs"], axis=1)
        g = hi @ ml["gate_t"]
        if self.track_margins:
            # first unit of each clamp pair: g1 = A r (s - theta + 1/2) + D r / 2
            r = hn[:, self.one:self.one + 1] / self.K
            m = mx.abs((g[:, 0::2] - self.delta * r / 2) / (self.gain * r))
            self._margins.append(mx.min(m))
        if ml["up_col"] is not None:
            up = hi[:, ml["up_col"]:ml["up_col"] + 1] * ml["up_val"]
        else:
            up = hi @ ml["up_t"]
        y = nn.silu(g) * up
        return h.at[:, ml["outputs"]].add(y @ ml["down_t"])

    def forward(self, embeddings: mx.array, *, keep: bool = False):
        """Residual after the last layer for ``embeddings`` [T, H]; ``keep`` returns all."""
        x = embeddings
        trace = [x] if keep else None
        for L, lay in enumerate(self.layers):
            if lay.mixer is not None:
                x = self._mix(L, x)
            if lay.mlp is not None:
                x = self._ffn(L, x)
            if keep:
                trace.append(x)
        return (x, trace) if keep else x

    def logits(self, x: mx.array) -> mx.array:
        hn = mx.fast.rms_norm(x, self.final_norm, self.eps)
        return mx.take(hn, self.out_dims, axis=1) @ self.emb_out

    def embed(self, tokens: list[int]) -> mx.array:
        rows = self.embedding[mx.array(tokens)]
        x = mx.zeros((len(tokens), self.hidden), dtype=mx.float32)
        return x.at[:, self.embedding_dims].add(rows)

    def step(self, tokens: list[int]) -> mx.array:
        """Feed tokens (prefill or one step); logits of the last one."""
        x = self.embed(tokens)
        if self.front is not None:
            x = self.front.add_to(x, tokens)
        self._margins = []
        x = self.forward(x)
        lg = self.logits(x[-1:])
        mx.eval(lg, *[s for s in self.state if s is not None], *self._margins)
        if self._margins:
            self.min_margin = min(self.min_margin, min(float(v) for v in self._margins))
        return lg[0]

    def recurrent_state(self, layer: int, head: int) -> np.ndarray:
        """The state [Dv, Dk] of dense head index ``head`` in ``layer`` (float32)."""
        mz = self.layers[layer].mixer
        i = mz["heads"].index(head)
        st = self.state[layer]
        if st is None:
            return np.zeros((mz["Dv"], mz["Dk"]), np.float32)
        return np.array(st[0, i])
