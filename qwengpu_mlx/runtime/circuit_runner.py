"""Fast execution of a compiled circuit: a narrow residual, merged projections, one compiled step.

The same operations as the dense Qwen3.5 model (``model.py``, mlx-lm) and as the wide
reference runner (``tests/support/runner_wide.py``), restricted to what the circuit uses:

* **The residual holds only live dims** (every dim a token embedding, a layer or the
  final norm touches: about 9,500 of the narrow shape's 131,072). The others are zero
  on every token, so a full-width RMSNorm's ``mean(x^2)`` is ``sum(x^2) * (1/hidden)``
  over the live dims: the multiply ``mx.fast.rms_norm`` itself does (bit for bit on the
  same terms, at every width we checked).
* **One projection per block input**: a mixer's ``qkv``, ``z``, ``b`` and ``a`` read the
  same normed residual and are one matrix product, sliced after.
* **One compiled function per decode token** (``mx.compile``): the 45 layers' small
  operations fuse where MLX can fuse them and the Python overhead is paid once.
  Prefills (many tokens at once) run the same function uncompiled.

Reductions over fewer terms may round differently in the last bit; the circuit's
margins make the tokens identical, and ``tests/runtime/test_circuit_runner.py`` compares this
path with the wide one, token for token and margin for margin.

``recurrence``: the Gated DeltaNet step (``recurrent.Recurrence``), the MLX-ops path
unless a caller passes a kernel it has checked (``gpu_trust``). ``native``: the built
native step module (``native``), which a caller passes only once it passed the probe
(``native_trust``); then every token runs as one MLX primitive (``native_step``) over
this runner's own arrays, and the MLX-ops layers below stay the reference.
"""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import numpy as np

from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig
from qwengpu_mlx.runtime.circuit_layers import MLP, Mixer, NarrowCircuit, PairedGate, mixer_weights, mlp_weights
from qwengpu_mlx.runtime.native_step import NativeStep, SparseRows, top_two
from qwengpu_mlx.runtime.recurrent import Recurrence, gated_delta_ops, gates, normalize_qk, precise_swiglu
from qwengpu_mlx.runtime.sparse_product import Product


def live_dims(cc) -> np.ndarray:
    """Every residual dim the circuit reads or writes, sorted (the narrow residual's dims)."""
    parts = [cc.embedding_dims, cc.out_dims, np.array([cc.one])]
    for cl in cc.layers:
        for block in (cl.mixer, cl.mlp):
            if block is not None:
                parts += [block.inputs, block.outputs]
    return np.unique(np.concatenate([np.asarray(p, np.int64) for p in parts]))


class CircuitRunner:
    """Runs a :class:`compiler.compact.CompactCircuit`; keeps per-layer recurrent state.

    Implements the launch runtime's runner interface (``runtime/runner.py``)."""

    def __init__(self, cc, machine: MachineConfig = DEFAULT_MACHINE, recurrence: Recurrence | None = None,
                 native=None):
        self.machine = machine
        self.hidden = cc.hidden
        self.eps = cc.eps
        self.live = live_dims(cc)
        pos = np.full(cc.hidden, -1, np.int64)
        pos[self.live] = np.arange(len(self.live))
        self.width = len(self.live)
        self._live_index = mx.array(self.live.astype(np.int32))
        self.embedding = mx.array(cc.embedding)  # [V, |embedding_dims|]
        self.embedding_pos = mx.array(pos[cc.embedding_dims].astype(np.int32))
        self.norm_w = [(mx.array(cl.norm_in[self.live]), mx.array(cl.norm_post[self.live])) for cl in cc.layers]
        self.final_norm = mx.array(cc.final_norm[cc.out_dims])
        self.out_pos = mx.array(pos[cc.out_dims].astype(np.int32))
        col = {int(d): i for i, d in enumerate(cc.embedding_dims)}
        self.emb_out = mx.array(cc.embedding[:, [col[int(d)] for d in cc.out_dims]].T.copy())  # [|out|, V]
        self.mixers = [None if cl.mixer is None else mixer_weights(cl.mixer, pos) for cl in cc.layers]
        self.mlps = [None if cl.mlp is None else mlp_weights(cl.mlp, pos, cc.one) for cl in cc.layers]
        self._mixer_layers = [L for L, m in enumerate(self.mixers) if m is not None]
        self.one_pos = int(pos[cc.one])
        self.K, self.gain, self.delta = cc.K, cc.gain, cc.delta
        self.memory_heads = cc.memory_heads
        self.recurrence = recurrence or gated_delta_ops
        self.track_margins = False
        self._compiled = {}
        self.narrow = NarrowCircuit(self.width, self.hidden, self.eps, self.K, self.gain, self.delta, self.one_pos,
                                    self.out_pos, self.final_norm, self.emb_out, self.norm_w, self.mixers, self.mlps)
        self.native = None
        if native is not None:
            self.native = NativeStep(self.narrow, native)
        self._rows = None  # the embedding in NumPy, once the native step embeds (no MLX op per token)
        self.reset()

    def reset(self) -> None:
        self.conv_state = [None] * len(self.mixers)
        self.state = [None] * len(self.mixers)
        self._packed = None  # the native step's (conv, state, activity), when it runs
        self.min_margin = float("inf")  # smallest gate margin seen, in bits (0.5 is ideal)

    # -- one layer (pure functions of their inputs: the compiled step traces them)

    def _rms(self, x: mx.array) -> mx.array:
        """Full-width RMSNorm's factor over the live dims: the dead ones add 0 to ``sum(x^2)``."""
        return mx.rsqrt(mx.sum(x * x, axis=-1, keepdims=True) * (1.0 / self.hidden) + self.eps)

    def _norm(self, x: mx.array, w: mx.array) -> mx.array:
        return x * self._rms(x) * w

    def _mix(self, mz: Mixer, w: mx.array, x: mx.array, conv_prev, state):
        """A Gated DeltaNet layer: its four stages (``bench/profile_step.py`` times each)."""
        qkv, z, b, a = self._mix_in(mz, w, x)
        conv, ci = self._conv(mz, qkv, conv_prev)
        y, state = self._recur(mz, conv, a, b, state)
        return self._mix_out(mz, x, y, z), ci[-3:], state

    def _mix_in(self, mz: Mixer, w: mx.array, x: mx.array):
        """Norm, the read dims, the one merged projection, split into qkv, z, b, a."""
        T = x.shape[0]
        H, Dv = mz.H, mz.Dv
        proj = mz.w_in(mx.take(self._norm(x, w), mz.inputs, axis=1))
        C = H * (2 * mz.Dk + Dv)
        z = proj[:, C:C + H * Dv].reshape(1, T, H, Dv)
        b = proj[:, C + H * Dv:C + H * Dv + H].reshape(1, T, H)
        a = proj[:, C + H * Dv + H:].reshape(1, T, H)
        return proj[:, :C], z, b, a

    def _conv(self, mz: Mixer, qkv: mx.array, conv_prev):
        """The causal 4-tap conv1d + SiLU over the previous 3 tokens' projections."""
        T, C = qkv.shape
        if conv_prev is None:
            conv_prev = mx.zeros((3, C), dtype=qkv.dtype)
        ci = mx.concatenate([conv_prev, qkv], axis=0)  # [T+3, C]
        cw = mz.conv
        conv = ci[0:T] * cw[:, 0] + ci[1:T + 1] * cw[:, 1] + ci[2:T + 2] * cw[:, 2] + ci[3:T + 3] * cw[:, 3]
        return nn.silu(conv), ci

    def _recur(self, mz: Mixer, conv: mx.array, a: mx.array, b: mx.array, state):
        """q, k, v from the conv, normalized; the gates; the recurrence."""
        T = conv.shape[0]
        H, Dk, Dv = mz.H, mz.Dk, mz.Dv
        q = conv[:, : H * Dk].reshape(1, T, H, Dk)
        k = conv[:, H * Dk: 2 * H * Dk].reshape(1, T, H, Dk)
        v = conv[:, 2 * H * Dk:].reshape(1, T, H, Dv)
        q, k = normalize_qk(q, k, inv_scale=Dk ** -0.5, eps=1e-6)
        g, beta = gates(mz.A_log, a, b, mz.dt_bias)
        if state is None:
            state = mx.zeros((1, H, Dv, Dk), dtype=mx.float32)
        return self.recurrence(q, k, v, g, beta, state)

    def _mix_out(self, mz: Mixer, x: mx.array, y: mx.array, z: mx.array) -> mx.array:
        """The gated RMSNorm and the output projection, added into the residual."""
        o = precise_swiglu(y, z, mx.fast.rms_norm(y, mz.norm, self.eps))
        return mz.out.add_into(x, o.reshape(x.shape[0], mz.H * mz.Dv))

    def _ffn(self, ml: MLP, w: mx.array, h: mx.array, margins: list | None):
        hn = self._norm(h, w)
        hi = mx.take(hn, ml.inputs, axis=1)
        g = ml.gate(hi)
        if margins is not None:
            # first unit of each clamp pair: g1 = A r (s - theta + 1/2) + D r / 2
            r = hn[:, self.one_pos:self.one_pos + 1] / self.K
            margins.append(mx.min(mx.abs((g[:, 0::2] - self.delta * r / 2) / (self.gain * r))))
        up = hi[:, ml.up_col:ml.up_col + 1] * ml.up_val if ml.up is None else ml.up(hi)
        return ml.down.add_into(h, nn.silu(g) * up)

    def _forward(self, x: mx.array, conv_state: list, state: list, track: bool, trace: list | None = None):
        """Residual after the last layer, the new conv and recurrent states, the margins;
        ``trace`` gets the residual after every layer."""
        conv_state, state = list(conv_state), list(state)
        margins = [] if track else None
        for L, (mz, ml) in enumerate(zip(self.mixers, self.mlps)):
            w_in, w_post = self.norm_w[L]
            if mz is not None:
                x, conv_state[L], state[L] = self._mix(mz, w_in, x, conv_state[L], state[L])
            if ml is not None:
                x = self._ffn(ml, w_post, x, margins)
            if trace is not None:
                trace.append(x)
        return x, conv_state, state, margins or []

    def forward(self, embeddings: mx.array, *, keep: bool = False):
        """Residual after the last layer for narrow ``embeddings`` (:meth:`embed`), at full
        width; ``keep`` also returns it after the embedding and after every layer (tests
        compare these with the dense model's). Does not touch the runner's state."""
        n = len(self.mixers)
        trace = [embeddings]
        self._forward(embeddings, [None] * n, [None] * n, False, trace)
        trace = [self.widen(x) for x in trace]
        return (trace[-1], trace) if keep else trace[-1]

    def widen(self, x: mx.array) -> mx.array:
        """A narrow residual [T, width] at the circuit's full width [T, hidden] (zeros elsewhere)."""
        full = mx.zeros((x.shape[0], self.hidden), dtype=x.dtype)
        return full.at[:, self._live_index].add(x)

    def _logits(self, x: mx.array) -> mx.array:
        hn = mx.take(x, self.out_pos, axis=1) * self._rms(x) * self.final_norm
        return hn @ self.emb_out

    def _token_step(self, track: bool):
        """The compiled one-token step (built once per margin setting, after the first token)."""
        if track not in self._compiled:
            n, used = len(self.mixers), self._mixer_layers

            def step(x, conv_packed, state_packed):
                conv_state, state = [None] * n, [None] * n
                for L, c, s in zip(used, conv_packed, state_packed):
                    conv_state[L], state[L] = c, s
                x, conv_state, state, margins = self._forward(x, conv_state, state, track)
                return (self._logits(x[-1:]), [conv_state[L] for L in used], [state[L] for L in used],
                        margins)

            self._compiled[track] = mx.compile(step)
        return self._compiled[track]

    def embed(self, tokens: list[int]) -> mx.array:
        rows = self.embedding[mx.array(tokens)]
        x = mx.zeros((len(tokens), self.width), dtype=mx.float32)
        return x.at[:, self.embedding_pos].add(rows)

    def step(self, tokens: list[int]) -> mx.array:
        """Feed tokens (prefill or one step); logits of the last one."""
        if self.native is not None:
            return self._native_steps(tokens)
        x = self.embed(tokens)
        track = self.track_margins
        started = all(s is not None for s, m in zip(self.state, self.mixers) if m is not None)
        if len(tokens) == 1 and started:
            used = self._mixer_layers
            lg, cs, st, margins = self._token_step(track)(x, [self.conv_state[L] for L in used],
                                                          [self.state[L] for L in used])
            for L, c, s in zip(used, cs, st):
                self.conv_state[L], self.state[L] = c, s
        else:
            x, self.conv_state, self.state, margins = self._forward(x, self.conv_state, self.state, track)
            lg = self._logits(x[-1:])
        mx.eval(lg, *[s for s in self.state if s is not None], *[c for c in self.conv_state if c is not None],
                *margins)
        if margins:
            self.min_margin = min(self.min_margin, min(float(v) for v in margins))
        return lg[0]

    def step_top_two(self, tokens: list[int]) -> tuple[int, float]:
        """:meth:`step`'s greedy token and logit margin (``native_step.top_two``); on the
        native step in one pass over its logits, without handing them to MLX."""
        if self.native is None:
            return top_two(np.array(self.step(tokens)))
        self._native_ready()
        at, logit_margin, margin = self.native.tokens_top_two(tokens, self._packed, self._rows, self.track_margins)
        if self.track_margins:
            self.min_margin = min(self.min_margin, margin)
        return at, logit_margin

    def _native_steps(self, tokens: list[int]) -> mx.array:
        return mx.array(self._native_logits(tokens))

    def _native_ready(self) -> None:
        """The native step's states and embedding rows, made at its first token."""
        if self._packed is None:
            self._packed = self.native.zeros()
        if self._rows is None:
            self._rows = SparseRows.of(np.array(self.embedding), np.array(self.embedding_pos))

    def _native_logits(self, tokens: list[int]) -> np.ndarray:
        """The tokens one by one on the native step (its states updated in place)."""
        self._native_ready()
        lg, margin = self.native.tokens(tokens, self._packed, self._rows, self.track_margins)
        if self.track_margins:
            self.min_margin = min(self.min_margin, margin)
        return lg

    def weights(self) -> list[mx.array]:
        """Every weight array the runner holds (memory accounting; tests check none changes)."""
        found = [self.embedding, self.final_norm, self.emb_out] + [w for pair in self.norm_w for w in pair]
        for block in self.mixers + self.mlps:
            for value in (vars(block).values() if block is not None else ()):
                if isinstance(value, (Product, PairedGate)):
                    found += value.arrays()
                elif isinstance(value, mx.array):
                    found.append(value)
        return found

    def nbytes(self) -> int:
        """Bytes of the runner's weights (what it adds to a process beyond its states),
        the native step's copy by row included."""
        return sum(a.nbytes for a in self.weights()) + (self.native.nbytes() if self.native else 0)

    def recurrent_state(self, layer: int, head: int) -> np.ndarray:
        """The state [Dv, Dk] of dense head index ``head`` in ``layer`` (float32)."""
        mz = self.mixers[layer]
        i = mz.heads.index(head)
        st = self.state[layer]
        if self.native is not None:
            st = None if self._packed is None else self.native.recurrent(self._packed, layer)
        if st is None:
            return np.zeros((mz.Dv, mz.Dk), np.float32)
        return np.array(st[0, i])
