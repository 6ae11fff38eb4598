"""The control unit: SIMT stack, warp scheduling, barriers, thread blocks, emission.

State lives in DeltaNet rows written by records the model itself emits:

* warp status, one single-row head per warp (``WST(w)`` records): state one-hot
  (ready, waiting, done), stack depth one-hot, exited lanes, resume block and mask;
* SIMT stack entries, rows (warp, level) (``ENT(item, w, level)`` records): pc, rpc
  (+ valid), mask. The running entry's pc and mask are in the EXEC token itself.

Per EXEC pass (docs/CIRCUIT.md): the "early" half (layers beside the first slot)
reads the stack and statuses and precomputes every candidate (pop targets, the next
ready warp, push levels, reconvergence tests); the "late" half, after the last slot
knows the branch predicate, picks the event (continue, pop, diverge, barrier, exit,
warp done, thread block done) and writes the step's records into latches. The emit
stage then walks the latched records, one token per pass.

Semantics follow the reference interpreter (qwengpu_mlx/core/reference.py): IPDOM stack with
GPGPU-Sim's compaction (no reconvergence entry when it equals the running entry's;
no entry for a side that starts at the reconvergence point), lowest runnable warp
first, barrier release when every live warp waits, deadlock when a waiting warp's
mask is not all its live lanes.
"""

from __future__ import annotations

from qwengpu_mlx.core.encoding import PSRC_FILE, PSRC_FWD, term_fields
from qwengpu_mlx.core.isa import TermKind
from qwengpu_mlx.core.records import NEXT_KINDS, ent_layout, next_layout, pc_bits, wst_layout
from qwengpu_mlx.core.vocab import CHUNK_BITS, CHUNK_SHIFT, ENT_ITEMS, MAX_GRID, STACK_LEVELS

from qwengpu_mlx.compiler.context import Context
from qwengpu_mlx.compiler.fetch import Fetch
from qwengpu_mlx.compiler.wiring import CircuitWiring


D = STACK_LEVELS
LEVEL_BITS = max(1, (D - 1).bit_length())  # an ENT token's level field, in binary


class Control:
    """The control unit's gates and heads, from the context's and the fetch's dims it is given."""

    def __init__(self, cw: CircuitWiring, ctx: Context, fetched: Fetch):
        self.cw = cw  # the plan it places its gates and heads in
        self.ctx = ctx  # the running warp, its mask, the launch geometry
        self.fetch = fetched  # the terminator's fields and decoders, the predicate file
        self.m = cw.m
        self.t = cw.t
        self.W = cw.m.max_warps
        self.N = cw.m.lanes
        # record bit layouts (``qwengpu_mlx.core.records``): the status row, a stack entry, the next token
        self.ST, self.EN, self.NX = wst_layout(self.m), ent_layout(self.m), next_layout(self.m)
        self.P = pc_bits(self.m)  # bits of a pc
        if self.P > term_fields(self.m)["target"][1]:
            raise ValueError(f"{self.m.rom_blocks} ROM blocks need {self.P}-bit pcs; "
                             f"the terminator encodes {term_fields(self.m)['target'][1]}")

    # small helpers
    def g(self, L, name, terms, theta, outputs):
        return self.cw.gate(L, name, terms, theta, outputs)

    def a(self, name, w):
        return self.cw.alloc(name, w)

    # ------------------------------------------------------------ state heads (layer 1)

    def heads(self, L: int) -> None:
        t, W, N = self.t, self.W, self.N
        # warp status rows
        self.status = []
        for w in range(W):
            h = self.cw.head(L, f"status.w{w}", 1, self.ST.bits)
            out = self.a(f"status.w{w}", self.ST.bits)
            h.key(0, t.wst_w[w], tap=0)
            for i in range(self.ST.bits):
                j = next(j for j in range(3) if CHUNK_SHIFT[j] <= i < CHUNK_SHIFT[j] + CHUNK_BITS[j])
                h.value_bit(i, t.chunk[j][i - CHUNK_SHIFT[j]], tap=1 + j)
                h.read_bit(i, out[i])
            self.cw.one_row_reader(h)
            self.status.append(out)
        # stack entries of the running warp, one head per level
        self.entry = []
        for k in range(D):
            h = self.cw.head(L, f"stack.level{k}", W * D, self.EN.bits)
            out = self.a(f"stack.level{k}", self.EN.bits)
            for w in range(W):
                for lev in range(D):
                    h.key(w * D + lev, t.ent_wl[w * D + lev], tap=0)
                h.query(w * D + k, self.ctx.warp[w])
            for i in range(self.EN.bits):
                j = next(j for j in range(3) if CHUNK_SHIFT[j] <= i < CHUNK_SHIFT[j] + CHUNK_BITS[j])
                h.value_bit(i, t.chunk[j][i - CHUNK_SHIFT[j]], tap=1 + j)
                h.read_bit(i, out[i])
            self.entry.append(out)
        # lanes that exist in each warp: 4w + l < ntid
        self.exist = []
        for w in range(W):
            sp = self.a(f"exist.w{w}", N)
            for lane in range(N):
                idx = w * N + lane
                ntid = [(self.ctx.ntid[i], 2 ** i) for i in range(self.ctx.ntid.width)]
                self.g(L, f"exist.w{w}l{lane}", ntid, idx + 1, [(sp[lane], 1)])
            self.exist.append(sp)

    # ------------------------------------------------------------ early half

    def early(self, L: int) -> None:
        """Everything the step's outcome may need that the branch predicate does not: 7 layers from ``L``.

        They run beside the first slot, so when the last slot knows the predicate the
        late half only picks among ready candidates: the running warp's depth and exited
        lanes, the top entry's reconvergence point, the pop candidates with and without
        this step's exit, the next ready or waiting warp, the push levels, deadlock tests.
        """
        E0, E1, E2, E3, E4, E5, E6 = (L + i for i in range(7))
        self.running_warp_status(E0)
        xFR, xTR = self.pc_xors(E0)
        xdl = self.deadlock_xors(E1)
        lm0, lm1, pcrpc = self.top_entry(E1)
        self.reconvergence_targets(E1, xFR, xTR)
        self.next_warps(E1)
        xT, xF, xR, xv = self.target_xors(E2)
        live0, live1 = self.live_levels(E2, lm0, lm1)
        bad = self.bad_waiting_warps(E2, xdl)
        xme = self.barrier_mask(E1, E2)
        self.reach_tests(E3, xT, xF, xR, xv)
        valid0, valid1 = self.valid_pop_levels(E3, live0, live1, pcrpc)
        self.deadlock_flags(E3, bad, xme)
        g0, g1 = self.pop_candidates(E4, valid0, valid1)
        self.push_base(E4)
        self.pop_selection(E5, g0, g1)
        self.taken_level(E5)
        self.pop_resume(E6)
        self.early_end = E6 + 1

    def xor(self, layer: int, name: str, x: int, y: int, out: int) -> None:
        """``out`` += x XOR y (two gates)."""
        self.g(layer, name + ".a", [(x, 1), (y, -1)], 1, [(out, 1)])
        self.g(layer, name + ".b", [(x, -1), (y, 1)], 1, [(out, 1)])

    def running_warp_status(self, E0: int) -> None:
        """The running warp's stack depth and exited lanes; which other warps are ready or waiting."""
        W, N, st, w1 = self.W, self.N, self.status, self.ctx.warp
        self.d = self.a("ctl.depth", D)
        self.exw = self.a("ctl.exited", N)
        for w in range(W):
            for k in range(D):
                self.g(E0, f"ctl.d.w{w}k{k}", [(w1[w], 1), (st[w][self.ST.depth[k]], 1)], 2, [(self.d[k], 1)])
            for lane in range(N):
                self.g(E0, f"ctl.ex.w{w}l{lane}", [(w1[w], 1), (st[w][self.ST.exited[lane]], 1)], 2,
                       [(self.exw[lane], 1)])
        self.rdy_o = self.a("ctl.ready_other", W)
        self.wait_o = self.a("ctl.wait_other", W)
        for w in range(W):
            self.g(E0, f"ctl.rdy.w{w}", [(st[w][self.ST.ready[0]], 1), (self.exist[w][0], 1), (w1[w], -1)], 2,
                   [(self.rdy_o[w], 1)])
            self.g(E0, f"ctl.wt.w{w}", [(st[w][self.ST.wait[0]], 1), (w1[w], -1)], 1, [(self.wait_o[w], 1)])

    def pc_xors(self, E0: int) -> tuple:
        """pc XOR rpc of every stack level; fallthrough and target XOR the reconvergence point."""
        P, en, tf = self.P, self.entry, self.fetch.term
        self.xpr = [self.a(f"ctl.xpr{k}", P) for k in range(D)]
        for k in range(D):
            for i in range(P):
                self.xor(E0, f"ctl.xpr{k}.{i}", en[k][self.EN.pc[i]], en[k][self.EN.rpc[i]], self.xpr[k][i])
        xFR, xTR = self.a("ctl.xFR", P), self.a("ctl.xTR", P)
        for i in range(P):
            self.xor(E0, f"ctl.xFR{i}", tf["fallthrough"][i], tf["reconv"][i], xFR[i])
            self.xor(E0, f"ctl.xTR{i}", tf["target"][i], tf["reconv"][i], xTR[i])
        return xFR, xTR

    def deadlock_xors(self, E1: int):
        """Per warp and lane: its barrier mask differs from its live lanes (the deadlock test)."""
        W, N, st = self.W, self.N, self.status
        xdl = self.a("ctl.xdl", W * N)
        for w in range(W):
            for lane in range(N):
                live = [(self.exist[w][lane], 1), (st[w][self.ST.exited[lane]], -1)]
                r = st[w][self.ST.mask[lane]]
                self.g(E1, f"ctl.xdl{w}{lane}.a", [(r, 1)] + [(d, -c) for d, c in live], 1, [(xdl[w * N + lane], 1)])
                self.g(E1, f"ctl.xdl{w}{lane}.b", [(r, -1)] + live, 1, [(xdl[w * N + lane], 1)])
        return xdl

    def top_entry(self, E1: int) -> tuple:
        """The top entry's rpc; per level its lanes still alive (without / with this step's exit) and pc == rpc."""
        P, N, en = self.P, self.N, self.entry
        self.rpc = self.a("ctl.rpc_top", P)
        self.rval = self.a("ctl.rval_top", 1)[0]
        for k in range(D):
            for i in range(P):
                self.g(E1, f"ctl.rpc{k}.{i}", [(self.d[k], 1), (en[k][self.EN.rpc[i]], 1)], 2, [(self.rpc[i], 1)])
            self.g(E1, f"ctl.rval{k}", [(self.d[k], 1), (en[k][self.EN.rvalid[0]], 1)], 2, [(self.rval, 1)])
        lm0 = [self.a(f"ctl.lm0.{k}", N) for k in range(D)]
        lm1 = [self.a(f"ctl.lm1.{k}", N) for k in range(D)]
        for k in range(D):
            for lane in range(N):
                mk = en[k][self.EN.mask[lane]]
                self.g(E1, f"ctl.lm0.{k}{lane}", [(mk, 1), (self.exw[lane], -1)], 1, [(lm0[k][lane], 1)])
                self.g(E1, f"ctl.lm1.{k}{lane}", [(mk, 1), (self.exw[lane], -1), (self.ctx.mask[lane], -1)], 1,
                       [(lm1[k][lane], 1)])
        pcrpc = self.a("ctl.pcrpc", D)
        for k in range(D):
            self.g(E1, f"ctl.pcrpc{k}", [(en[k][self.EN.rvalid[0]], 1)] + [(x, -1) for x in self.xpr[k].dims], 1,
                   [(pcrpc[k], 1)])
        return lm0, lm1, pcrpc

    def reconvergence_targets(self, E1: int, xFR, xTR) -> None:
        """The fallthrough, the target is the reconvergence point (no stack entry for that side)."""
        rv = self.fetch.term["reconv_valid"][0]
        self.fallIsR = self.a("ctl.fallIsR", 1)[0]
        self.targIsR = self.a("ctl.targIsR", 1)[0]
        self.g(E1, "ctl.fallIsR", [(rv, 1)] + [(x, -1) for x in xFR.dims], 1, [(self.fallIsR, 1)])
        self.g(E1, "ctl.targIsR", [(rv, 1)] + [(x, -1) for x in xTR.dims], 1, [(self.targIsR, 1)])

    def next_warps(self, E1: int) -> None:
        """Any other warp ready, waiting; the lowest ready, the lowest waiting, the lowest to release."""
        W, w1 = self.W, self.ctx.warp
        self.other_ready = self.a("ctl.other_ready", 1)[0]
        self.other_wait = self.a("ctl.other_wait", 1)[0]
        self.g(E1, "ctl.other_ready", [(x, 1) for x in self.rdy_o.dims], 1, [(self.other_ready, 1)])
        self.g(E1, "ctl.other_wait", [(x, 1) for x in self.wait_o.dims], 1, [(self.other_wait, 1)])
        self.schedR = self.a("ctl.schedR", W)  # lowest ready warp other than the running one
        self.schedW = self.a("ctl.schedW", W)  # lowest waiting warp other than the running one
        self.relW = self.a("ctl.relW", W)  # lowest of {running warp} + waiting others
        for w in range(W):
            self.g(E1, f"ctl.schedR{w}", [(self.rdy_o[w], 1)] + [(self.rdy_o[v], -1) for v in range(w)], 1,
                   [(self.schedR[w], 1)])
            self.g(E1, f"ctl.schedW{w}", [(self.wait_o[w], 1)] + [(self.wait_o[v], -1) for v in range(w)], 1,
                   [(self.schedW[w], 1)])
            terms = [(w1[w], 1), (self.wait_o[w], 1)] + [(w1[v], -1) for v in range(w)] + \
                    [(self.wait_o[v], -1) for v in range(w)]
            self.g(E1, f"ctl.relW{w}", terms, 1, [(self.relW[w], 1)])

    def target_xors(self, E2: int) -> tuple:
        """Target, fallthrough, reconvergence point (and its valid bit) XOR the top entry's rpc."""
        P, tf = self.P, self.fetch.term
        xT, xF, xR = self.a("ctl.xT", P), self.a("ctl.xF", P), self.a("ctl.xR", P)
        xv = self.a("ctl.xv", 1)[0]
        for i in range(P):
            self.xor(E2, f"ctl.xT{i}", tf["target"][i], self.rpc[i], xT[i])
            self.xor(E2, f"ctl.xF{i}", tf["fallthrough"][i], self.rpc[i], xF[i])
            self.xor(E2, f"ctl.xR{i}", tf["reconv"][i], self.rpc[i], xR[i])
        self.xor(E2, "ctl.xv", tf["reconv_valid"][0], self.rval, xv)
        return xT, xF, xR, xv

    def live_levels(self, E2: int, lm0, lm1) -> tuple:
        """Per level: some lane of its mask is still alive (without / with this step's exit)."""
        live0, live1 = self.a("ctl.live0", D), self.a("ctl.live1", D)
        for k in range(D):
            self.g(E2, f"ctl.live0.{k}", [(x, 1) for x in lm0[k].dims], 1, [(live0[k], 1)])
            self.g(E2, f"ctl.live1.{k}", [(x, 1) for x in lm1[k].dims], 1, [(live1[k], 1)])
        return live0, live1

    def bad_waiting_warps(self, E2: int, xdl):
        """Per other warp: it waits at a barrier with a mask that is not all its live lanes."""
        W, N = self.W, self.N
        bad = self.a("ctl.bad_other", W)
        for w in range(W):
            self.g(E2, f"ctl.bad{w}", [(self.wait_o[w], N)] + [(xdl[w * N + lane], 1) for lane in range(N)], N + 1,
                   [(bad[w], 1)])
        return bad

    def barrier_mask(self, E1: int, E2: int):
        """The running warp at a barrier: per lane, a live lane outside its mask."""
        W, N, w1 = self.W, self.N, self.ctx.warp
        existme = self.a("ctl.exist_me", N)
        for lane in range(N):
            for w in range(W):
                self.g(E1, f"ctl.existme{lane}.w{w}", [(w1[w], 1), (self.exist[w][lane], 1)], 2, [(existme[lane], 1)])
        xme = self.a("ctl.xme", N)
        for lane in range(N):  # a live lane outside the mask
            self.g(E2, f"ctl.xme{lane}", [(existme[lane], 1), (self.exw[lane], -1), (self.ctx.mask[lane], -1)], 1,
                   [(xme[lane], 1)])
        return xme

    def reach_tests(self, E3: int, xT, xF, xR, xv) -> None:
        """Target, fallthrough reach the top entry's reconvergence point; it equals the terminator's."""
        self.reachT, self.reachF, self.eqR = (self.a("ctl.reachT", 1)[0], self.a("ctl.reachF", 1)[0],
                                              self.a("ctl.eqR", 1)[0])
        self.g(E3, "ctl.reachT", [(self.rval, 1)] + [(x, -1) for x in xT.dims], 1, [(self.reachT, 1)])
        self.g(E3, "ctl.reachF", [(self.rval, 1)] + [(x, -1) for x in xF.dims], 1, [(self.reachF, 1)])
        self.g(E3, "ctl.eqR", [(x, -1) for x in xR.dims] + [(xv, -1)], 0, [(self.eqR, 1)])

    def valid_pop_levels(self, E3: int, live0, live1, pcrpc) -> tuple:
        """Per level: a pop may resume it (lanes alive, not already at its reconvergence point)."""
        valid0, valid1 = self.a("ctl.valid0", D), self.a("ctl.valid1", D)
        for k in range(D):
            self.g(E3, f"ctl.valid0.{k}", [(live0[k], 1), (pcrpc[k], -1)], 1, [(valid0[k], 1)])
            self.g(E3, f"ctl.valid1.{k}", [(live1[k], 1), (pcrpc[k], -1)], 1, [(valid1[k], 1)])
        return valid0, valid1

    def deadlock_flags(self, E3: int, bad, xme) -> None:
        """Some other waiting warp, or the running warp at its barrier, can never be released."""
        self.dead_other = self.a("ctl.dead_other", 1)[0]
        self.dead_me = self.a("ctl.dead_me", 1)[0]
        self.g(E3, "ctl.dead_other", [(x, 1) for x in bad.dims], 1, [(self.dead_other, 1)])
        self.g(E3, "ctl.dead_me", [(x, 1) for x in xme.dims], 1, [(self.dead_me, 1)])

    def pop_candidates(self, E4: int, valid0, valid1) -> tuple:
        """Per level below the top: a valid pop target (without / with this step's exit)."""
        g0, g1 = self.a("ctl.g0", D), self.a("ctl.g1", D)
        for k in range(D):
            above = [(self.d[j], 1) for j in range(k + 1, D)]
            self.g(E4, f"ctl.g0.{k}", [(valid0[k], 1)] + above, 2, [(g0[k], 1)])
            self.g(E4, f"ctl.g1.{k}", [(valid1[k], 1)] + above, 2, [(g1[k], 1)])
        return g0, g1

    def push_base(self, E4: int) -> None:
        """The level of the other side's entry on divergence: the running entry's own if the branch
        reconverges where it does (no reconvergence entry: GPGPU-Sim's compaction), else one up."""
        self.base = self.a("ctl.base", D + 1)
        for k in range(D + 1):
            if k < D:
                self.g(E4, f"ctl.base.same{k}", [(self.d[k], 1), (self.eqR, 1)], 2, [(self.base[k], 1)])
            if k >= 1:
                self.g(E4, f"ctl.base.up{k}", [(self.d[k - 1], 1), (self.eqR, -1)], 1, [(self.base[k], 1)])

    def pop_selection(self, E5: int, g0, g1) -> None:
        """The highest valid pop target (without / with this step's exit), or none."""
        self.pop0, self.pop1 = self.a("ctl.pop0", D), self.a("ctl.pop1", D)
        self.pop0none, self.pop1none = self.a("ctl.pop0none", 1)[0], self.a("ctl.pop1none", 1)[0]
        for k in range(D):
            self.g(E5, f"ctl.pop0.{k}", [(g0[k], 1)] + [(g0[j], -1) for j in range(k + 1, D)], 1, [(self.pop0[k], 1)])
            self.g(E5, f"ctl.pop1.{k}", [(g1[k], 1)] + [(g1[j], -1) for j in range(k + 1, D)], 1, [(self.pop1[k], 1)])
        self.g(E5, "ctl.pop0none", [(x, -1) for x in g0.dims], 0, [(self.pop0none, 1)])
        self.g(E5, "ctl.pop1none", [(x, -1) for x in g1.dims], 0, [(self.pop1none, 1)])

    def taken_level(self, E5: int) -> None:
        """The level of the taken side's entry: the base if the fallthrough side needs no entry (it starts
        at the reconvergence point), else one above it."""
        self.lvl_t = self.a("ctl.level_taken", D + 2)
        for k in range(D + 2):
            if k < D + 1:
                self.g(E5, f"ctl.lt.same{k}", [(self.base[k], 1), (self.fallIsR, 1)], 2, [(self.lvl_t[k], 1)])
            if k >= 1:
                self.g(E5, f"ctl.lt.up{k}", [(self.base[k - 1], 1), (self.fallIsR, -1)], 1, [(self.lvl_t[k], 1)])

    def pop_resume(self, E6: int) -> None:
        """What a pop (without / with this step's exit) resumes: the entry's pc and its live lanes."""
        P, N, en = self.P, self.N, self.entry
        self.popPC = [self.a(f"ctl.popPC{v}", P) for v in range(2)]
        self.popMask = [self.a(f"ctl.popMask{v}", N) for v in range(2)]
        for v, sel in enumerate((self.pop0, self.pop1)):
            for k in range(D):
                for i in range(P):
                    self.g(E6, f"ctl.popPC{v}.{k}.{i}", [(sel[k], 1), (en[k][self.EN.pc[i]], 1)], 2,
                           [(self.popPC[v][i], 1)])
                for lane in range(N):
                    terms = [(sel[k], 1), (en[k][self.EN.mask[lane]], 1), (self.exw[lane], -1)]
                    if v == 1:
                        terms.append((self.ctx.mask[lane], -1))
                    self.g(E6, f"ctl.popMask{v}.{k}.{lane}", terms, 2, [(self.popMask[v][lane], 1)])

    # ------------------------------------------------------------ late half

    def late(self, L: int, slots: list) -> int:
        m, N = self.m, self.N
        tf = self.fetch.term
        L = max(L, self.early_end)
        # branch predicate per lane and the final predicate file
        self.pfin = [self.a(f"pfin.lane{lane}", m.preds) for lane in range(N)]
        bp = [self.a(f"bp.lane{lane}", 1)[0] for lane in range(N)]
        neg = tf["pred_neg"][0]
        for lane in range(N):
            sources = [(PSRC_FILE + i, self.fetch.pfile[lane][i]) for i in range(m.preds)]
            sources += [(PSRC_FWD + k, io.pres[lane]) for k, io in enumerate(slots)]
            for p in range(m.preds):
                for code, dim in sources:
                    self.g(L, f"pfin.l{lane}p{p}c{code}", [(self.fetch.pfinal_src[p][code], 1), (dim, 1)], 2,
                           [(self.pfin[lane][p], 1)])
            for code, dim in sources:
                self.g(L, f"bp.l{lane}c{code}p", [(self.fetch.term_pred[code], 1), (dim, 1), (neg, -1)], 2, [(bp[lane], 1)])
                self.g(L, f"bp.l{lane}c{code}n", [(self.fetch.term_pred[code], 1), (dim, -1), (neg, 1)], 2, [(bp[lane], 1)])
        C1, C2, C3, C4, C5 = (L + 1 + i for i in range(5))
        # C1: taken / not-taken lanes
        taken_n, fall_n = self.a("ctl.taken_n", 1)[0], self.a("ctl.fall_n", 1)[0]
        self.m_t, self.m_nt = self.a("ctl.mask_taken", N), self.a("ctl.mask_fall", N)
        for lane in range(N):
            self.g(C1, f"ctl.mt{lane}", [(self.ctx.mask[lane], 1), (bp[lane], 1)], 2, [(self.m_t[lane], 1), (taken_n, 1)])
            self.g(C1, f"ctl.mnt{lane}", [(self.ctx.mask[lane], 1), (bp[lane], -1)], 1, [(self.m_nt[lane], 1), (fall_n, 1)])
        # C2: any taken / any not taken
        tb, fb = self.a("ctl.tb", 1)[0], self.a("ctl.fb", 1)[0]
        self.g(C2, "ctl.tb", [(taken_n, 1)], 1, [(tb, 1)])
        self.g(C2, "ctl.fb", [(fall_n, 1)], 1, [(fb, 1)])
        # C3: events
        K = self.fetch.term_kind
        br, jmp, bar, ext = K[TermKind.BRANCH], K[TermKind.JUMP], K[TermKind.BARRIER], K[TermKind.EXIT]
        go_t, go_f = self.a("ctl.go_t", 1)[0], self.a("ctl.go_f", 1)[0]
        reach, cont, div = self.a("ctl.reach", 1)[0], self.a("ctl.cont", 1)[0], self.a("ctl.div", 1)[0]
        self.g(C3, "ctl.go_t.j", [(jmp, 1), (bar, 1)], 1, [(go_t, 1)])
        self.g(C3, "ctl.go_t.b", [(br, 1), (tb, 1), (fb, -1)], 2, [(go_t, 1)])
        self.g(C3, "ctl.go_f", [(br, 1), (fb, 1), (tb, -1)], 2, [(go_f, 1)])
        self.g(C3, "ctl.reach.j", [(jmp, 1), (self.reachT, 1)], 2, [(reach, 1)])
        self.g(C3, "ctl.reach.t", [(br, 1), (tb, 1), (fb, -1), (self.reachT, 1)], 3, [(reach, 1)])
        self.g(C3, "ctl.reach.f", [(br, 1), (fb, 1), (tb, -1), (self.reachF, 1)], 3, [(reach, 1)])
        self.g(C3, "ctl.cont.j", [(jmp, 1), (self.reachT, -1)], 1, [(cont, 1)])
        self.g(C3, "ctl.cont.t", [(br, 1), (tb, 1), (fb, -1), (self.reachT, -1)], 2, [(cont, 1)])
        self.g(C3, "ctl.cont.f", [(br, 1), (fb, 1), (tb, -1), (self.reachF, -1)], 2, [(cont, 1)])
        self.g(C3, "ctl.div", [(br, 1), (tb, 1), (fb, 1)], 3, [(div, 1)])
        # C4: actions
        A = {k: self.a(f"ctl.A.{k}", 1)[0] for k in
             ("cont", "pop0", "pop1", "done", "bar", "div", "sched", "release", "ctadone", "dead", "ovf")}
        self.g(C4, "ctl.A.cont", [(cont, 1)], 1, [(A["cont"], 1)])
        self.g(C4, "ctl.A.pop0", [(reach, 1), (self.pop0none, -1)], 1, [(A["pop0"], 1)])
        self.g(C4, "ctl.A.pop1", [(ext, 1), (self.pop1none, -1)], 1, [(A["pop1"], 1)])
        self.g(C4, "ctl.A.done.r", [(reach, 1), (self.pop0none, 1)], 2, [(A["done"], 1)])
        self.g(C4, "ctl.A.done.e", [(ext, 1), (self.pop1none, 1)], 2, [(A["done"], 1)])
        self.g(C4, "ctl.A.bar", [(bar, 1)], 1, [(A["bar"], 1)])
        self.g(C4, "ctl.A.div", [(div, 1)], 1, [(A["div"], 1)])
        # overflow of the stack on divergence
        self.g(C4, "ctl.ovf.a", [(div, 1), (self.d[D - 1], 1), (self.eqR, -1)], 2, [(A["ovf"], 1)])
        self.g(C4, "ctl.ovf.b", [(div, 1), (self.base[D], 1), (self.targIsR, -1)], 2, [(A["ovf"], 1)])
        self.g(C4, "ctl.ovf.c", [(div, 1), (self.lvl_t[D], 1), (self.targIsR, -1)], 2, [(A["ovf"], 1)])
        self.g(C4, "ctl.ovf.d", [(div, 1), (self.lvl_t[D + 1], 1), (self.targIsR, -1)], 2, [(A["ovf"], 1)])
        # next block when continuing
        jt = self.a("ctl.jt", self.P)
        for i in range(self.P):
            self.g(C4, f"ctl.jt.t{i}", [(go_t, 1), (tf["target"][i], 1)], 2, [(jt[i], 1)])
            self.g(C4, f"ctl.jt.f{i}", [(go_f, 1), (tf["fallthrough"][i], 1)], 2, [(jt[i], 1)])
        # C5: scheduling decisions after a stop
        self.g(C5, "ctl.A.sched", [(A["bar"], 1), (A["done"], 1), (self.other_ready, 1)], 2, [(A["sched"], 1)])
        self.g(C5, "ctl.A.release.b", [(A["bar"], 1), (self.other_ready, -1)], 1, [(A["release"], 1)])
        self.g(C5, "ctl.A.release.d", [(A["done"], 1), (self.other_ready, -1), (self.other_wait, 1)], 2,
               [(A["release"], 1)])
        self.g(C5, "ctl.A.ctadone", [(A["done"], 1), (self.other_ready, -1), (self.other_wait, -1)], 1,
               [(A["ctadone"], 1)])
        self.g(C5, "ctl.A.dead.b", [(A["bar"], 1), (self.other_ready, -1), (self.dead_other, 1)], 2, [(A["dead"], 1)])
        self.g(C5, "ctl.A.dead.m", [(A["bar"], 1), (self.other_ready, -1), (self.dead_me, 1)], 2, [(A["dead"], 1)])
        self.g(C5, "ctl.A.dead.d", [(A["done"], 1), (self.other_ready, -1), (self.dead_other, 1)], 2, [(A["dead"], 1)])
        self.A, self.jt = A, jt
        return self.outputs(C5 + 1, slots)

    def outputs(self, L: int, slots: list) -> int:
        """Next EXEC / CTA / STOP / FAULT and the records of this step (WST, ENT), all in MLP ``L``."""
        O1 = L
        self.next_exec(O1)
        fterms = self.next_kind(O1, slots)
        self.cta_after(L, O1, fterms)
        self.next_cta_id(O1)
        self.wst = [self.a(f"ctl.wst.w{w}", self.ST.bits) for w in range(self.W)]
        self.wst_present = self.a("ctl.wst.present", self.W)
        for w in range(self.W):
            self.wst_running(O1, w)
            self.wst_released(O1, w)
        self.ent_records(O1)
        return L + 1

    def put_next(self, O1: int, name: str, cond, bits_b=None, warp_terms=None, mask_b=None) -> None:
        """Where every term of ``cond`` holds: the next EXEC's block from ``bits_b``, mask from
        ``mask_b``, warp from the one-hot ``warp_terms`` (each given or not)."""
        NX, nb, nw, nm = self.NX, self.nb, self.nw, self.nm
        th = sum(c for _, c in cond if c > 0)
        if bits_b is not None:
            for i in range(NX.block.width):
                self.g(O1, f"{name}.b{i}", cond + [(bits_b[i], 1)], th + 1, [(nb[i], 1)])
        if mask_b is not None:
            for lane in range(self.N):
                self.g(O1, f"{name}.m{lane}", cond + [(mask_b[lane], 1)], th + 1, [(nm[lane], 1)])
        if warp_terms is not None:
            for i in range(NX.warp.width):
                for w in range(self.W):
                    if w >> i & 1:
                        self.g(O1, f"{name}.w{i}.{w}", cond + [(warp_terms[w], 1)], th + 1, [(nw[i], 1)])

    def next_exec(self, O1: int) -> None:
        """Which warp runs next, from which block, with which mask (``records.next_layout``'s EXEC fields)."""
        A, tf, w1, NX = self.A, self.fetch.term, self.ctx.warp, self.NX
        self.nb = self.a("ctl.next.block", NX.block.width)
        self.nw = self.a("ctl.next.warp", NX.warp.width)
        self.nm = self.a("ctl.next.mask", NX.mask.width)
        # continue / pop: same warp
        self.put_next(O1, "nx.cont", [(A["cont"], 1)], self.jt, w1, self.ctx.mask)
        self.put_next(O1, "nx.pop0", [(A["pop0"], 1)], self.popPC[0], w1, self.popMask[0])
        self.put_next(O1, "nx.pop1", [(A["pop1"], 1)], self.popPC[1], w1, self.popMask[1])
        # divergence: the taken side if it is not the reconvergence point, else the other side
        self.put_next(O1, "nx.div.t", [(A["div"], 1), (self.targIsR, -1)], tf["target"], w1, self.m_t)
        self.put_next(O1, "nx.div.f", [(A["div"], 1), (self.targIsR, 1)], tf["fallthrough"], w1, self.m_nt)
        self.next_exec_switch(O1)
        self.next_exec_release(O1)

    def next_exec_switch(self, O1: int) -> None:
        """After a stop of the running warp: the lowest other ready warp, where its status says it resumes."""
        A, st, NX = self.A, self.status, self.NX
        for w in range(self.W):
            cond = [(A["sched"], 1), (self.schedR[w], 1)]
            self.put_next(O1, f"nx.sched{w}", cond, [st[w][self.ST.pc[i]] for i in range(self.P)], None,
                          [st[w][self.ST.mask[lane]] for lane in range(self.N)])
            for i in range(NX.warp.width):
                if w >> i & 1:
                    self.g(O1, f"nx.sched{w}.w{i}", cond, 2, [(self.nw[i], 1)])

    def next_exec_release(self, O1: int) -> None:
        """A barrier's release: the lowest of the runner and the waiting warps; after the runner
        finished, the lowest waiting warp (relW only when the release includes the runner)."""
        A, tf, st, w1, NX = self.A, self.fetch.term, self.status, self.ctx.warp, self.NX
        for w in range(self.W):
            # the runner itself resumes at the barrier's target with its mask; another warp where it waits
            cond = [(A["release"], 1), (A["bar"], 1), (self.relW[w], 1), (w1[w], 1)]
            self.put_next(O1, f"nx.relme{w}", cond, tf["target"], None, self.ctx.mask)
            cond_o = [(A["release"], 1), (A["bar"], 1), (self.relW[w], 1), (w1[w], -1)]
            self.put_next(O1, f"nx.relo{w}", cond_o, [st[w][self.ST.pc[i]] for i in range(NX.block.width)], None,
                          [st[w][self.ST.mask[lane]] for lane in range(self.N)])
            for i in range(NX.warp.width):
                if w >> i & 1:
                    self.g(O1, f"nx.rel{w}.w{i}", [(A["release"], 1), (A["bar"], 1), (self.relW[w], 1)], 3,
                           [(self.nw[i], 1)])
            # release after the runner finished: the lowest waiting warp
            cond_d = [(A["release"], 1), (A["done"], 1), (self.schedW[w], 1)]
            self.put_next(O1, f"nx.reld{w}", cond_d, [st[w][self.ST.pc[i]] for i in range(self.P)], None,
                          [st[w][self.ST.mask[lane]] for lane in range(self.N)])
            for i in range(NX.warp.width):
                if w >> i & 1:
                    self.g(O1, f"nx.reld{w}.w{i}", cond_d, 3, [(self.nw[i], 1)])

    def next_kind(self, O1: int, slots: list) -> list:
        """The next token's kind: EXEC or a fault (a memory fault of any slot wins, then overflow, deadlock).

        Returns the terms that veto any other kind after a memory fault.
        """
        A = self.A
        self.nk = {k: self.a(f"ctl.next.{k}", 1)[0] for k in NEXT_KINDS}
        nk = self.nk
        faults = [io.fault for io in slots]
        fterms = [(f_, -4) for f_ in faults]  # no other kind after a memory fault
        self.g(O1, "nk.fault1", [(f_, 1) for f_ in faults], 1, [(nk["FAULT1"], 1)])
        self.g(O1, "nk.fault0", [(A["ovf"], 1)] + fterms, 1, [(nk["FAULT0"], 1)])
        self.g(O1, "nk.fault2", [(A["dead"], 1), (A["ovf"], -4)] + fterms, 1, [(nk["FAULT2"], 1)])
        self.g(O1, "nk.exec", [(A["cont"], 1), (A["pop0"], 1), (A["pop1"], 1), (A["div"], 1), (A["sched"], 1),
                               (A["release"], 1), (A["dead"], -4), (A["ovf"], -4)] + fterms, 1, [(nk["EXEC"], 1)])
        return fterms

    def cta_after(self, L: int, O1: int, fterms: list) -> None:
        """Thread block done: CTA for the next one, or STOP after the last (ctaid + 1 == nctaid:
        two thresholds on the binary fields, MLP ``L - 2``, and their AND, ``L - 1``)."""
        A, nk = self.A, self.nk
        last = self.a("ctl.cta_last", 1)[0]
        halves = self.a("ctl.cta_last.halves", 2)
        diff = [(d, 2 ** i) for i, d in enumerate(self.ctx.ctaid.dims)] + \
            [(d, -2 ** i) for i, d in enumerate(self.ctx.nctaid.dims)]  # ctaid - nctaid
        self.g(L - 2, "ctl.last.ge", diff, -1, [(halves[0], 1)])
        self.g(L - 2, "ctl.last.le", [(d, -w) for d, w in diff], 1, [(halves[1], 1)])
        self.g(L - 1, "ctl.last", [(halves[0], 1), (halves[1], 1)], 2, [(last, 1)])
        self.g(O1, "nk.cta", [(A["ctadone"], 1), (last, -1), (A["dead"], -4)] + fterms, 1, [(nk["CTA"], 1)])
        self.g(O1, "nk.stop", [(A["ctadone"], 1), (last, 1), (A["dead"], -4)] + fterms, 2, [(nk["STOP"], 1)])

    def next_cta_id(self, O1: int) -> None:
        """ctaid + 1 in binary: bit i of x = ctaid + 1 is the alternating sum of [x >= k 2^i]."""
        self.next_cta = self.a("ctl.next.cta", self.ctx.ctaid.width)
        ctaid = [(d, 2 ** i) for i, d in enumerate(self.ctx.ctaid.dims)]
        for i in range(self.next_cta.width):
            for k in range(1, MAX_GRID // 2 ** i + 1):
                self.g(O1, f"ctl.ncta.b{i}.k{k}", ctaid, k * 2 ** i - 1, [(self.next_cta[i], 1 if k % 2 else -1)])

    def wst_running(self, O1: int, w: int) -> None:
        """Warp ``w``'s WST record if it is the running warp: on pop, divergence, barrier, done."""
        A, tf, ST, N = self.A, self.fetch.term, self.ST, self.N
        me, o, pr = (self.ctx.warp[w], 1), self.wst[w], self.wst_present[w]
        for act in ("pop0", "pop1", "div", "bar"):
            self.g(O1, f"wst{w}.pr.{act}", [me, (A[act], 1)], 2, [(pr, 1)])
        # a finished warp's record matters only if the thread block goes on
        self.g(O1, f"wst{w}.pr.done", [me, (A["done"], 1), (A["ctadone"], -1)], 2, [(pr, 1)])
        # ready unless waiting (barrier without release) or done
        self.g(O1, f"wst{w}.ready", [me, (A["pop0"], 1), (A["pop1"], 1), (A["div"], 1), (A["release"], 1),
                                     (A["done"], -4)], 2, [(o[ST.ready[0]], 1)])
        self.g(O1, f"wst{w}.wait", [me, (A["bar"], 1), (A["release"], -1)], 2, [(o[ST.wait[0]], 1)])
        self.g(O1, f"wst{w}.done", [me, (A["done"], 1)], 2, [(o[ST.done[0]], 1)])
        self.wst_depth(O1, w)
        # exited lanes (this step's exit adds the mask)
        for lane in range(N):
            self.g(O1, f"wst{w}.ex.{lane}", [me, (self.exw[lane], 1)], 2, [(o[ST.exited[lane]], 1)])
            self.g(O1, f"wst{w}.exm.{lane}", [me, (self.fetch.term_kind[TermKind.EXIT], 1), (self.ctx.mask[lane], 1),
                                             (self.exw[lane], -1)], 3, [(o[ST.exited[lane]], 1)])
        # resume point after a barrier
        for i in range(ST.pc.width):
            self.g(O1, f"wst{w}.pc.{i}", [me, (A["bar"], 1), (tf["target"][i], 1)], 3, [(o[ST.pc[i]], 1)])
        for lane in range(N):
            self.g(O1, f"wst{w}.mk.{lane}", [me, (A["bar"], 1), (self.ctx.mask[lane], 1)], 3, [(o[ST.mask[lane]], 1)])

    def wst_depth(self, O1: int, w: int) -> None:
        """The running warp's new stack depth (one-hot): after a pop, a barrier, a divergence."""
        A, o, depth = self.A, self.wst[w], self.ST.depth
        me = (self.ctx.warp[w], 1)
        for k in range(D):
            self.g(O1, f"wst{w}.d.pop0.{k}", [me, (A["pop0"], 1), (self.pop0[k], 1)], 3, [(o[depth[k]], 1)])
            self.g(O1, f"wst{w}.d.pop1.{k}", [me, (A["pop1"], 1), (self.pop1[k], 1)], 3, [(o[depth[k]], 1)])
            self.g(O1, f"wst{w}.d.bar.{k}", [me, (A["bar"], 1), (self.d[k], 1)], 3, [(o[depth[k]], 1)])
            # divergence: the top is the taken level, or the base if only the other side runs
            self.g(O1, f"wst{w}.d.divt.{k}", [me, (A["div"], 1), (self.targIsR, -1), (self.lvl_t[k], 1)], 3,
                   [(o[depth[k]], 1)])
            self.g(O1, f"wst{w}.d.divf.{k}", [me, (A["div"], 1), (self.targIsR, 1), (self.base[k], 1)], 4,
                   [(o[depth[k]], 1)])

    def wst_released(self, O1: int, w: int) -> None:
        """Warp ``w``'s WST record if another warp's barrier released it: ready, the rest unchanged."""
        A, o, st = self.A, self.wst[w], self.status
        rel = [(self.ctx.warp[w], -1), (A["release"], 1), (self.wait_o[w], 1)]
        self.g(O1, f"wst{w}.rel.pr", rel, 2, [(self.wst_present[w], 1), (o[self.ST.ready[0]], 1)])
        for i in range(self.ST.depth.offset, self.ST.bits):
            self.g(O1, f"wst{w}.rel.{i}", rel + [(st[w][i], 1)], 3, [(o[i], 1)])

    def ent_records(self, O1: int) -> None:
        """ENT records of a divergence: e0 the reconvergence entry (level d), e1 the other side
        (base), e2 the taken side (level_t); each only where it is pushed (compaction)."""
        A, tf = self.A, self.fetch.term
        self.ent = [self.a(f"ctl.ent{k}", self.EN.bits) for k in range(ENT_ITEMS)]
        self.ent_level = [self.a(f"ctl.ent{k}.level", LEVEL_BITS) for k in range(ENT_ITEMS)]
        self.ent_present = self.a("ctl.ent.present", ENT_ITEMS)
        dv = [(A["div"], 1)]
        self.g(O1, "ent0.pr", dv + [(self.eqR, -1)], 1, [(self.ent_present[0], 1)])
        self.g(O1, "ent1.pr", dv + [(self.fallIsR, -1)], 1, [(self.ent_present[1], 1)])
        self.g(O1, "ent2.pr", dv + [(self.targIsR, -1)], 1, [(self.ent_present[2], 1)])
        for k, onehot in enumerate((self.d, self.base, self.lvl_t)):
            self.ent_level_bits(O1, f"ent{k}.lv", onehot, self.ent_level[k], dv)
        self.ent_fields(O1, dv, tf["reconv_valid"][0])

    def ent_level_bits(self, O1: int, name: str, onehot, out, extra) -> None:
        """The level field of an ENT header in binary, from a one-hot level."""
        for k in range(min(D, onehot.width)):
            for i in range(LEVEL_BITS):
                if k >> i & 1:
                    self.g(O1, f"{name}.{k}.{i}", extra + [(onehot[k], 1)], len(extra) + 1, [(out[i], 1)])

    def ent_fields(self, O1: int, dv, rv: int) -> None:
        """The pushed entries' pc, rpc (+ valid) and mask (``records.ent_layout``)."""
        tf, EN = self.fetch.term, self.EN
        e0, e1, e2 = self.ent
        for i in range(self.P):
            self.g(O1, f"ent0.pc{i}", dv + [(tf["reconv"][i], 1)], 2, [(e0[EN.pc[i]], 1)])
            self.g(O1, f"ent0.rpc{i}", dv + [(self.rpc[i], 1)], 2, [(e0[EN.rpc[i]], 1)])
            self.g(O1, f"ent1.pc{i}", dv + [(tf["fallthrough"][i], 1)], 2, [(e1[EN.pc[i]], 1)])
            self.g(O1, f"ent2.pc{i}", dv + [(tf["target"][i], 1)], 2, [(e2[EN.pc[i]], 1)])
            for e in (e1, e2):
                self.g(O1, f"ent.R{i}.{e.name}", dv + [(tf["reconv"][i], 1)], 2, [(e[EN.rpc[i]], 1)])
        self.g(O1, "ent0.rv", dv + [(self.rval, 1)], 2, [(e0[EN.rvalid[0]], 1)])
        for e in (e1, e2):
            self.g(O1, f"ent.rv.{e.name}", dv + [(rv, 1)], 2, [(e[EN.rvalid[0]], 1)])
        for lane in range(self.N):
            self.g(O1, f"ent0.m{lane}", dv + [(self.ctx.mask[lane], 1)], 2, [(e0[EN.mask[lane]], 1)])
            self.g(O1, f"ent1.m{lane}", dv + [(self.m_nt[lane], 1)], 2, [(e1[EN.mask[lane]], 1)])
            self.g(O1, f"ent2.m{lane}", dv + [(self.m_t[lane], 1)], 2, [(e2[EN.mask[lane]], 1)])
