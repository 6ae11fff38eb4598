"""The circuit runner's token step as one native call (``native/circuit_step.cpp``).

MLX's CPU back end costs about 10 us per operation and a token of the circuit is about a
thousand of them (``bench/profile_step.py``), which keeps the MLX-ops runner near 20
tokens/s however its products are stored. :class:`NativeStep` hands the same arithmetic,
over the same weights and the same narrow residual, to one call on the caller's thread:
every product by output row with its non-zeros in input order (the MLX path's sparse
sum order), MLX's own CPU elementwise functions, over NumPy buffers. By default it runs
only what a token uses (the sparse step, bit for bit the dense one:
``tests/runtime/test_native_sparse.py``). The MLX-ops runner stays the reference: the
runtime uses this step only after a probe launch matched it (``native_trust``), and
``tests/runtime/test_native_step.py`` compares the two on the representative kernels.
"""

from __future__ import annotations

import os

import numpy as np

from qwengpu_mlx.runtime.circuit_layers import NarrowCircuit, PairedGate
from qwengpu_mlx.runtime.sparse_product import Product

MIXER, MLP = 1, 2


def by_row(p: Product):
    """``(rowptr, cols, vals, row_targets)`` of a :class:`Product`, whichever way it is stored."""
    if p.dense:
        W = np.array(p.w_t).T
        targets = None if p.targets is None else np.array(p.targets)
    else:
        rows = np.array(p.rows)
        cols = np.arange(p.inp) if p.cols is None else np.array(p.cols)
        W = np.zeros((p.out, p.inp), np.float32)
        W[rows, cols] = np.array(p.vals)
        targets = None
        if p.targets is not None:
            targets = np.zeros(p.out, np.int64)
            targets[rows] = np.array(p.targets)
    r, c = np.nonzero(W)  # row-major: by row, then by input
    rowptr = np.searchsorted(r, np.arange(p.out + 1))
    return rowptr, c, W[r, c], targets


def _aux_bytes(H: int, C: int, Dk: int) -> int:
    """A mixer's activity bytes (``circuit_step.cpp``'s Activity lays them out, :meth:`NativeStep.activity` names them)."""
    return 5 * H + C + H * Dk + 1


def split_rows(p: Product, H: int, Dk: int, Dv: int) -> tuple[tuple, tuple]:
    """A mixer's input projection [q, k, v, z, beta, a] as two by-row parts: the front
    ``[q, k, beta, a]`` every token scatters (its key rows say which heads are quiet), and
    the back, each head's value then z rows (``[v_0, z_0, v_1, z_1, ...]``), which only
    the heads that run compute (``circuit_step.cpp``'s lazy values). Each part is
    ``(rows, rowptr, cols, vals)``, a row's non-zeros in input order as in :func:`by_row`."""
    rowptr, cols, vals, _ = by_row(p)
    C = H * (2 * Dk + Dv)
    front = np.concatenate([np.arange(2 * H * Dk), C + H * Dv + np.arange(2 * H)])
    back = np.concatenate([[2 * H * Dk + h * Dv + np.arange(Dv), C + h * Dv + np.arange(Dv)] for h in range(H)]).ravel()

    def part(rows):
        n = np.diff(rowptr)[rows]
        take = np.concatenate([np.arange(rowptr[r], rowptr[r + 1]) for r in rows]) if n.sum() else np.zeros(0, int)
        return len(rows), np.concatenate([[0], np.cumsum(n)]), cols[take], vals[take]

    return part(front), part(back)


def inputs_limit(parts: list, conv) -> float:
    """A bound on a mixer's normed inputs under which every projection row is finite, a
    value's conv too: a row over the inputs is at most its |weights| sum times the largest
    |input|, a conv output at most the largest channel's |taps| sum times that, kept below
    1e30 here. The step leaves a head that has nothing to do as it is only under it
    (``circuit_step.cpp``'s ``kept_as_is``: a non-finite value or conv state would have
    turned its state to NaN). ``parts``: ``split_rows``'s by-row parts."""
    sums = [np.bincount(np.repeat(np.arange(out), np.diff(rowptr)), np.abs(vals), minlength=1)
            for out, rowptr, _, vals in parts]
    rows = max(float(s.max(initial=0.0)) for s in sums)
    taps = np.abs(np.asarray(conv, np.float64)).reshape(np.shape(conv)[0], -1).sum(axis=1)
    return float(1e30 / max(rows * max(float(taps.max(initial=0.0)), 1.0), 1e-30))


def taps_used(conv, H: int, Dk: int) -> np.ndarray:
    """[2H] per head the conv taps its key channels read (bit t for tap t: a circuit's
    channel reads one), then those its query channels read: the step tells a key or query
    that reads only zeros now from these (``circuit_step.cpp``'s ``zero_at_taps``)."""
    used = (np.asarray(conv).reshape(np.shape(conv)[0], -1) != 0) @ (1 << np.arange(4))
    q = used[:H * Dk].reshape(H, Dk)
    k = used[H * Dk:2 * H * Dk].reshape(H, Dk)
    return np.concatenate([np.bitwise_or.reduce(k, axis=1), np.bitwise_or.reduce(q, axis=1)])


class _Blobs:
    """The weights packed into one float32 and one int32 array; the program holds offsets."""

    def __init__(self):
        self.floats: list[np.ndarray] = []
        self.ints: list[np.ndarray] = []
        self._nf = self._ni = 0

    def f(self, a) -> int:
        a = np.asarray(a, np.float32).ravel()
        self.floats.append(a)
        self._nf += a.size
        return self._nf - a.size

    def i(self, a) -> int:
        a = np.asarray(a, np.int64).ravel()
        assert a.size == 0 or (a.min() >= np.iinfo(np.int32).min and a.max() <= np.iinfo(np.int32).max)
        self.ints.append(a.astype(np.int32))
        self._ni += a.size
        return self._ni - a.size

    def product(self, p: Product) -> list[int]:
        """A product's record: by row (the dense step) and by input column (the sparse one)."""
        rowptr, cols, vals, targets = by_row(p)
        if targets is not None and np.unique(targets).size != targets.size:  # the step adds rows in any order
            raise ValueError("the native step needs a product's rows to add into distinct residual dims")
        return self.rows(p.out, p.inp, rowptr, cols, vals, targets)

    def rows(self, out: int, inp: int, rowptr, cols, vals, targets=None) -> list[int]:
        """:meth:`product`'s record of rows given by row (``rowptr``, ``cols``, ``vals``)."""
        rows = np.repeat(np.arange(out), np.diff(rowptr))
        order = np.lexsort((rows, cols))  # by input column, then row
        colptr = np.searchsorted(cols[order], np.arange(inp + 1))
        return [out, inp, self.i(rowptr), self.i(cols), self.f(vals), -1 if targets is None else self.i(targets),
                self.i(colptr), self.i(rows[order]), self.f(vals[order])]

    def row_groups(self, p: Product, most: int = 64, most_runs: int = 1024, span: int = 128) -> list[int]:
        """A product's leading columns that every row holds, its rows grouped by their values
        there (``circuit_step.cpp``'s RowGroups): ``[columns, groups, group of each row,
        the groups' values, runs, (first row, end, group) of each run, spans, (first row,
        end, group) of each span, the largest and the smallest weight of each span in each
        column ([columns, spans])]``; no columns when there are more than ``most`` groups.
        A run is consecutive rows of one group (a token kind's rows): the step fills each
        with its group's partial sum instead of looking up every row's group; no runs when
        there are more than ``most_runs``. Spans cut the runs into ``span`` rows at most:
        their weights bound their rows, so the greedy token is found without the rows of
        the spans that cannot hold it (``top_two_grouped``)."""
        rowptr, cols, vals, _ = by_row(p)
        held = np.bincount(cols, minlength=p.inp)
        lead = int(np.argmin(held == p.out)) if (held != p.out).any() else p.inp
        W = np.zeros((p.out, lead), np.float32)
        rows = np.repeat(np.arange(p.out), np.diff(rowptr))
        first = cols < lead
        W[rows[first], cols[first]] = vals[first]
        table, group_of = np.unique(W, axis=0, return_inverse=True)
        if lead == 0 or len(table) > most:
            none = self.i(np.zeros(0))
            return [0, 0, self.i(np.zeros(p.out, np.int64)), self.f(np.zeros(0)), 0, none, 0, none,
                    *[self.f(np.zeros(0))] * 3, none]
        group_of = group_of.ravel()
        starts = np.flatnonzero(np.diff(group_of, prepend=-1))
        runs = np.stack([starts, np.append(starts[1:], p.out), group_of[starts]], axis=1)
        spans = np.array([(a, min(a + span, e), g) for s, e, g in runs for a in range(s, e, span)], np.int64)
        high, low, at = self._span_bounds(p.inp, lead, spans, rows, cols, np.asarray(vals, np.float32))
        if len(runs) > most_runs:
            runs = np.zeros((0, 3), np.int64)
        return [lead, len(table), self.i(group_of), self.f(table), len(runs), self.i(runs),
                len(spans), self.i(spans), self.f(high), self.f(low), self.f(np.maximum(high, -low)), self.i(at)]

    @staticmethod
    def _span_bounds(inp: int, lead: int, spans: np.ndarray, rows, cols, vals) -> tuple:
        """([inp, spans] the largest and the smallest weight of each span's rows in each
        column past the ``lead`` (a row without a weight there holds 0; the lead columns:
        0), [spans + 1, inp] where each span's terms start in each column of the product
        stored by column (by column, then row: :meth:`product`'s ``colptr``, ``crows``))."""
        span_of = np.searchsorted(spans[:, 0], rows, side="right") - 1
        high = np.full((inp, len(spans)), -np.inf, np.float32)
        low = np.full((inp, len(spans)), np.inf, np.float32)
        held = np.zeros((inp, len(spans)), np.int64)
        np.maximum.at(high, (cols, span_of), vals)
        np.minimum.at(low, (cols, span_of), vals)
        np.add.at(held, (cols, span_of), 1)
        some = held < (spans[:, 1] - spans[:, 0])[None, :]  # a row of the span lacks it: 0
        high[some] = np.maximum(high[some], 0.0)
        low[some] = np.minimum(low[some], 0.0)
        high[:lead] = low[:lead] = 0.0
        colptr = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=inp))])
        at = colptr[None, :-1] + np.concatenate([np.zeros((1, inp), np.int64), np.cumsum(held, axis=1).T])
        return high, low, at

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        cat = lambda parts, dt: np.concatenate(parts) if parts else np.zeros(0, dt)  # noqa: E731
        return cat(self.floats, np.float32), cat(self.ints, np.int32)


def step_threads() -> int:
    """Threads the step's logits take where it computes every row (a token whose logits are
    read, or whose greedy token the spans left undecided: ``top_two_grouped``; the launch
    loop's greedy token is otherwise found on the calling thread from a few hundred rows):
    ``$QWENGPU_MLX_THREADS``, else 1 (``bench/threads.py``
    measures what more give on this machine)."""
    try:
        return max(1, int(os.environ.get("QWENGPU_MLX_THREADS", "1")))
    except ValueError:
        return 1


def top_two(logits: np.ndarray) -> tuple[int, float]:
    """``(greedy token, its logit minus the runner-up's)`` of logits [V]: the first index of
    the largest value (``np.argmax``), and that value minus the largest of all the others
    in float32 (0 on a tie; +inf with one logit). What the launch loop reads of a token's
    logits; :meth:`NativeStep.top_two` gives the same pair in one native pass."""
    lg = np.array(logits, np.float32).reshape(-1)
    tok = int(np.argmax(lg))
    best = lg[tok]
    lg[tok] = -np.inf  # the runner-up: np.partition slows to milliseconds on the many tied logits
    return tok, float(best - lg.max())


class SparseRows:
    """The embedding rows by their non-zeros, at their residual positions: a token's
    residual is 0 + its row (the runner's ``embed``); a zero entry would give the +0
    that is there already, so only the non-zeros are added (a twelfth of the large
    machine's rows, which its native pack stores)."""

    def __init__(self, rowptr: np.ndarray, cols: np.ndarray, vals: np.ndarray):
        self.rowptr, self.cols, self.vals = rowptr, cols, vals

    @classmethod
    def of(cls, rows: np.ndarray, positions: np.ndarray) -> "SparseRows":
        r, c = np.nonzero(rows)
        return cls(np.searchsorted(r, np.arange(rows.shape[0] + 1)), positions[c].astype(np.int32),
                   rows[r, c].astype(np.float32))

    def embed(self, token: int, width: int) -> np.ndarray:
        x = np.zeros(width, np.float32)
        a, b = self.rowptr[token], self.rowptr[token + 1]
        x[self.cols[a:b]] += self.vals[a:b]
        return x


class NativeStep:
    """One token of a :class:`~qwengpu_mlx.runtime.circuit_runner.CircuitRunner` in one call.

    ``weights``: the runner's :class:`NarrowCircuit` (``runner.narrow``: all this step reads of it);
    ``module``: the built extension (``native.load``). Holds its own copy of the weights,
    by row (:meth:`nbytes`); conv and recurrent states are one float32 array each,
    every mixer at its offset (:meth:`layer_states` gives one layer's), and the activity
    bytes a third (uint8)."""

    def __init__(self, weights: NarrowCircuit, module, sparse: bool = True):
        self.module = module
        blobs = _Blobs()
        self.layout = {}  # mixer layer -> (conv shape, conv offset, state shape, state offset)
        conv_at = state_at = aux_at = 0
        body, blocks = [], 0
        for L, (mz, ml) in enumerate(zip(weights.mixers, weights.mlps)):
            w_in, w_post = weights.norm_w[L]
            if mz is not None:
                C = mz.H * (2 * mz.Dk + mz.Dv)
                self.layout[L] = ((3, C), conv_at, (1, mz.H, mz.Dv, mz.Dk), state_at)
                front, back = split_rows(mz.w_in, mz.H, mz.Dk, mz.Dv)
                body += [MIXER, blobs.f(w_in), blobs.i(mz.inputs), mz.inputs.size, *blobs.product(mz.w_in),
                         C, mz.H, mz.Dk, mz.Dv, blobs.f(mz.conv), blobs.f(mz.dt_bias), blobs.f(mz.A_log),
                         blobs.f(mz.norm), *blobs.product(mz.out), conv_at, state_at, aux_at,
                         blobs.f(np.array(mz.conv).T),  # the taps again by tap: [4, C]
                         *blobs.rows(front[0], mz.w_in.inp, *front[1:]), *blobs.rows(back[0], mz.w_in.inp, *back[1:]),
                         blobs.f([inputs_limit([front, back], mz.conv)]), blobs.i(taps_used(mz.conv, mz.H, mz.Dk))]
                # conv state: the ring's three rows, then the layer's normed inputs of the same
                # three steps (a head's values are rebuilt from them: circuit_step.cpp's Ring)
                conv_at += 3 * C + 3 * mz.inputs.size
                state_at += mz.H * mz.Dv * mz.Dk
                # activity: heads' conv and state, channels, state columns; heads' quiet key and query
                # counts; the conv state's oldest row (the conv rows are a ring: circuit_step.cpp's Ring);
                # heads whose values' conv states are not kept (rebuilt when the head runs)
                aux_at += _aux_bytes(mz.H, C, mz.Dk)
                blocks += 1
            if ml is not None:
                body += self._mlp(blobs, ml, w_post)
                blocks += 1
        self.conv_size, self.state_size, self.aux_size = conv_at, state_at, aux_at
        self.V = weights.emb_out.shape[1]
        tied = Product(np.array(weights.emb_out).T)  # the tied rows, [V, |out|]
        header = [weights.width, self.V, blocks, 0, weights.one_pos, weights.out_pos.size,
                  blobs.i(weights.out_pos), blobs.f(weights.final_norm), *blobs.product(tied),
                  *blobs.row_groups(tied)]
        key_dims = {weights.mixers[L].Dk for L in self.layout}
        if len(key_dims) > 1:  # the q/k scales below are one pair of constants for every mixer
            raise ValueError(f"the native step needs one key width in every mixer, not {sorted(key_dims)}")
        inv = key_dims.pop() ** -0.5 if key_dims else 1.0
        consts = [1.0 / weights.hidden, weights.eps, weights.K, weights.gain, weights.delta, inv ** 2, inv,
                  1e-6 * inv ** 2]
        self.floats, self.ints = blobs.arrays()
        self.width = weights.width
        self._attach(header + body, consts, sparse)

    def _attach(self, program: list[int], consts: list[float], sparse: bool) -> None:
        """The plans of ``program``: its header's margin flag off and on, each with the
        logits and without them (a prompt token before the last: no one reads its logits)."""
        threads = step_threads()
        self._plans = {(track, logits): self.module.plan(program[:3] + [int(track)] + program[4:], consts,
                                                         sparse=sparse, threads=threads, logits=logits)
                       for track in (False, True) for logits in (False, True)}
        self._program, self._consts, self.sparse = program[:3] + [0] + program[4:], consts, sparse

    @property
    def mlp_layers(self) -> int:
        """Layers with an MLP: the program's layer blocks (its header's third int) less the
        mixers ``layout`` holds; the same whether built or read from a pack."""
        return self._program[2] - len(self.layout)

    def arrays(self) -> dict[str, np.ndarray]:
        """Everything this step is, as arrays (``native_runner`` caches them): the weight
        blobs, the program, the constants, the state sizes and each mixer's layout."""
        layout = [[L, cs[1], co, ss[1], ss[2], ss[3], so] for L, (cs, co, ss, so) in sorted(self.layout.items())]
        return {"floats": self.floats, "ints": self.ints, "program": np.array(self._program, np.int64),
                "consts": np.array(self._consts, np.float64),
                "sizes": np.array([self.conv_size, self.state_size, self.aux_size, self.V, self.width], np.int64),
                "layout": np.array(layout, np.int64).reshape(-1, 7)}

    @classmethod
    def from_arrays(cls, arrays: dict, module, sparse: bool = True) -> "NativeStep":
        """The step :meth:`arrays` describes, over ``module`` (no circuit needed)."""
        step = cls.__new__(cls)
        step.module = module
        step.floats = np.ascontiguousarray(arrays["floats"], np.float32)
        step.ints = np.ascontiguousarray(arrays["ints"], np.int32)
        step.conv_size, step.state_size, step.aux_size, step.V, step.width = (int(v) for v in arrays["sizes"])
        step.layout = {int(L): ((3, int(C)), int(co), (1, int(H), int(Dv), int(Dk)), int(so))
                       for L, C, co, H, Dv, Dk, so in arrays["layout"]}
        step._attach([int(v) for v in arrays["program"]], [float(v) for v in arrays["consts"]], sparse)
        return step

    @staticmethod
    def _mlp(blobs: _Blobs, ml, w_post) -> list[int]:
        rec = [MLP, blobs.f(w_post), blobs.i(ml.inputs), ml.inputs.size]
        if isinstance(ml.gate, PairedGate):
            units = int(ml.gate.bias.size)
            rec += [1, *blobs.product(ml.gate.shared), ml.gate.one_col, blobs.f(ml.gate.bias)]
        else:
            units = ml.gate.out
            rec += [0, *blobs.product(ml.gate)]
        if ml.up is None:
            rec += [1, ml.up_col, blobs.f([ml.up_val])]
        else:
            rec += [0, *blobs.product(ml.up)]
        bias_max = float(np.abs(np.array(ml.gate.bias)).max(initial=0.0)) if isinstance(ml.gate, PairedGate) else 0.0
        return rec + [*blobs.product(ml.down), units, blobs.f([bias_max])]

    def zeros(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Packed conv and recurrent states and activity bytes of a fresh sequence (the MLX
        path's ``None``): a step takes these three as one tuple and updates them in place."""
        return (np.zeros(self.conv_size, np.float32), np.zeros(self.state_size, np.float32),
                np.zeros(self.aux_size, np.uint8))

    def _buffers(self, x) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(x [W] as the step reads it, logits [V] and residual [W] for it to write)."""
        x = np.ascontiguousarray(np.asarray(x, np.float32).reshape(-1))
        return x, np.empty(self.V, np.float32), np.empty(self.width, np.float32)

    def _run(self, plan, x, packed) -> tuple[np.ndarray, np.ndarray, float]:
        x, logits, residual = self._buffers(x)
        margin = self.module.run(plan, x, *packed, self.floats, self.ints, logits, residual)
        return logits, residual, margin

    def __call__(self, x, packed, track: bool) -> tuple[np.ndarray, float]:
        """``(logits [V], smallest gate margin)`` after token ``x`` ([W] or [1, W]); the
        states ``packed`` (:meth:`zeros`) are updated in place."""
        logits, _, margin = self._run(self._plans[track, True], x, packed)
        return logits, margin

    def profiled(self, x, packed, tokens: int) -> dict[str, float]:
        """Seconds per token in each stage of the step, over ``tokens`` decode tokens of ``x``."""
        plan = self.module.plan(self._program, self._consts, profile=True, sparse=self.sparse)
        for _ in range(tokens):
            self._run(plan, x, packed)
        seconds, ran = self.module.profile(plan)
        return {stage: t / ran for stage, t in zip(self.module.STAGES, seconds)}

    def start_profile(self, blocks: bool = False) -> None:
        """Tokens from now on run on profiling plans (``bench/profile_step.py --machines``):
        the same arithmetic, each stage's thread CPU time and the work counted; ``blocks``:
        each layer block's CPU time instead (:meth:`block_report`), with no clock inside one."""
        self._plans = {(track, logits): self.module.plan(self._program[:3] + [int(track)] + self._program[4:],
                                                         self._consts, profile=not blocks, sparse=self.sparse,
                                                         logits=logits, profile_blocks=blocks)
                       for track in (False, True) for logits in (False, True)}

    def block_report(self) -> list[tuple[str, float]]:
        """(block, seconds per token) of each layer block since :meth:`start_profile` with
        ``blocks``, in the program's order, then the final norm and logits. A mixer is named
        by its layer and heads; an MLP by the mixer layer it follows (``+``: an MLP of a
        later layer with no mixer of its own)."""
        seconds, ops, tokens = None, [], 0
        for plan in self._plans.values():
            s, o, n = self.module.block_profile(plan)
            if len(s):
                seconds, ops = (np.array(s) if seconds is None else seconds + np.array(s)), list(o)
            tokens += n
        if seconds is None:
            return []
        mixers, names, last = iter(sorted(self.layout)), [], None
        for op in ops:
            if op == self.module.MIXER:
                last = next(mixers)
                names.append(f"L{last} mixer x{self.layout[last][2][1]}")
            else:
                follows = names and names[-1].startswith(f"L{last} mixer")
                names.append(f"L{last} mlp" if follows else f"L{last}+ mlp")
        return list(zip(names + ["final norm+logits"], seconds / max(tokens, 1)))

    def profile_report(self) -> tuple[dict[str, float], dict[str, float]]:
        """(seconds per token in each stage, work per token) since :meth:`start_profile`."""
        seconds, work, tokens = np.zeros(len(self.module.STAGES)), np.zeros(len(self.module.COUNTS)), 0
        for plan in self._plans.values():
            s, n = self.module.profile(plan)
            seconds, work, tokens = seconds + s, work + np.array(self.module.work(plan)), tokens + n
        tokens = max(tokens, 1)
        return (dict(zip(self.module.STAGES, seconds / tokens)), dict(zip(self.module.COUNTS, work / tokens)))

    def residual(self, x, packed, blocks: int) -> np.ndarray:
        """The residual [1, W] after the first ``blocks`` layer blocks (mixers and MLPs), for
        tests (``packed`` is updated in place, as in :meth:`__call__`)."""
        plan = self.module.plan(self._program, self._consts, blocks, sparse=self.sparse)
        return self._run(plan, x, packed)[1].reshape(1, -1)

    def tokens(self, tokens: list[int], packed, rows: "SparseRows", track: bool) -> tuple[np.ndarray, float]:
        """``(logits [V] of the last token, smallest gate margin)`` after ``tokens`` one by
        one from ``packed`` (updated in place), each embedded by ``rows``; the tokens
        before the last run without their logits (the same states and margins)."""
        margin = self._prompt(tokens[:-1], packed, rows, track)
        logits, _, m = self._run(self._plans[track, True], rows.embed(tokens[-1], self.width), packed)
        return logits, min(margin, m)

    def _prompt(self, tokens: list[int], packed, rows: "SparseRows", track: bool) -> float:
        """``tokens`` one by one without their logits (no one reads them): the smallest gate margin."""
        margin = float("inf")
        for t in tokens:
            margin = min(margin, self._run(self._plans[track, False], rows.embed(t, self.width), packed)[2])
        return margin

    def tokens_top_two(self, tokens: list[int], packed, rows: "SparseRows", track: bool) -> tuple[int, float, float]:
        """:meth:`tokens`, then :func:`top_two` of the last token's logits: ``(greedy token,
        its logit margin, smallest gate margin)``. The step finds the pair from the rows of
        the token kinds that can hold it (``circuit_step.cpp``'s ``top_two_grouped``), the
        same pair as from every logit; a NaN logit takes NumPy's rules, as :meth:`top_two`."""
        margin = self._prompt(tokens[:-1], packed, rows, track)
        x, logits, residual = self._buffers(rows.embed(tokens[-1], self.width))
        at, logit_margin, m = self.module.run_top_two(self._plans[track, True], x, *packed, self.floats, self.ints,
                                                      logits, residual)
        margin = min(margin, m)
        if at < 0:
            at, logit_margin = top_two(logits)
        return int(at), float(logit_margin), margin

    def top_two(self, logits: np.ndarray) -> tuple[int, float]:
        """:func:`top_two` of a token's logits [V], in one native pass over them."""
        at, margin = self.module.top_two(np.ascontiguousarray(logits, np.float32))
        return (int(at), float(margin)) if at >= 0 else top_two(logits)

    def settled(self, packed) -> np.ndarray:
        """The packed conv states as the dense step holds them (a copy): the sparse step
        keeps no value conv states for heads that do not run (``values_stale``); these are
        rebuilt here from the layer's normed inputs, as the step rebuilds them when such a
        head runs again (the same products, the same floats)."""
        conv, aux = packed[0].copy(), packed[2].copy()
        self.module.settle(self._plans[False, False], conv, aux, self.floats, self.ints)
        return conv

    def layer_states(self, packed, layer: int) -> tuple[np.ndarray, np.ndarray]:
        """Mixer ``layer``'s conv state [3, C] (oldest row first: a copy, as the step keeps its
        rows as a ring, its stale values rebuilt: :meth:`settled`) and recurrent state [1, H,
        Dv, Dk] (a view: the next step changes it), of packed states. The step stores each
        head's state by key dim ([Dk, Dv]: a key dim in use is contiguous); the view is
        transposed back."""
        cs, co, _, _ = self.layout[layer]
        oldest = int(self.activity(packed, layer)["oldest_row"][0])
        rows = self.settled(packed)[co:co + int(np.prod(cs))].reshape(cs)
        return rows[[(oldest + i) % 3 for i in range(3)]], self.recurrent(packed, layer)

    def recurrent(self, packed, layer: int) -> np.ndarray:
        """:meth:`layer_states`' recurrent state alone (a launch's memory read: no conv
        states to settle)."""
        _, (_, H, Dv, Dk), so = self.layout[layer][1:]
        by_key = packed[1][so:so + H * Dv * Dk].reshape(H, Dk, Dv)
        return by_key.transpose(0, 2, 1)[None]

    def activity(self, packed, layer: int) -> dict[str, np.ndarray]:
        """Mixer ``layer``'s activity bytes (views, as ``circuit_step.cpp``'s mixer_sparse lays
        them out): which heads' conv channels and states ever held a non-zero, which conv
        channels and state columns did, each head's quiet key and query counts, the conv
        ring's oldest row, and which heads' value conv states are stale (:meth:`settled`)."""
        at = 0
        for L, ((_, C), _, (_, H, _, Dk), _) in sorted(self.layout.items()):
            if L == layer:
                parts = {"head_conv": H, "head_state": H, "channels": C, "columns": H * Dk, "key_quiet": H,
                         "query_quiet": H, "oldest_row": 1, "values_stale": H}
                views = {}
                for name, n in parts.items():
                    views[name], at = packed[2][at:at + n], at + n
                return views
            at += _aux_bytes(H, C, Dk)
        raise KeyError(f"no mixer in layer {layer}")

    def nbytes(self) -> int:
        """Bytes of the weights this step holds beyond the runner's."""
        return self.floats.nbytes + self.ints.nbytes
