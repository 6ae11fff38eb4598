"""The control unit's early half: every candidate outcome the branch predicate does not decide.

It runs beside the first slot (7 MLPs from layer 2) and reads the warp statuses and the
running warp's stack entries (``control.control_state``): the running warp's depth and
exited lanes, the top entry's reconvergence point, the pop candidates with and without
this step's exit, the next ready or waiting warp, the push levels, the deadlock tests.
It returns them as :class:`Candidates`; the late half (``control_late``) picks among them.
"""

from __future__ import annotations

from dataclasses import dataclass

from qwengpu_mlx.compiler.context import Context
from qwengpu_mlx.compiler.control import D, ControlState, record_layouts
from qwengpu_mlx.compiler.fetch import Fetch
from qwengpu_mlx.compiler.residual import Subspace
from qwengpu_mlx.compiler.wiring import CircuitWiring


@dataclass(frozen=True)
class Candidates:
    """What the early half made that the late half reads (Subspaces and dims)."""

    end: int  # the first layer after the early half
    depth: Subspace  # the running warp's stack depth, one-hot
    exited: Subspace  # the running warp's exited lanes
    wait_other: Subspace  # per warp: another warp waiting at a barrier
    rpc: Subspace  # the top entry's reconvergence pc
    rpc_valid: int  # dim: the top entry has a reconvergence pc
    fall_is_r: int  # dim: the fallthrough is the terminator's reconvergence point
    targ_is_r: int  # dim: the target is the terminator's reconvergence point
    any_ready: int  # dim: some other warp is ready
    any_waiting: int  # dim: some other warp waits
    next_ready: Subspace  # the lowest ready warp other than the running one, one-hot
    next_waiting: Subspace  # the lowest waiting warp other than the running one, one-hot
    next_released: Subspace  # the lowest of the running warp and the waiting others, one-hot
    reach_t: int  # dim: the target reaches the top entry's reconvergence point
    reach_f: int  # dim: the fallthrough reaches it
    same_rpc: int  # dim: the terminator's reconvergence point is the top entry's
    dead_other: int  # dim: another waiting warp can never be released
    dead_running: int  # dim: the running warp at its barrier can never be released
    base: Subspace  # the other side's entry level on divergence, one-hot
    level_taken: Subspace  # the taken side's entry level on divergence, one-hot
    pop0: Subspace  # the level a pop resumes without this step's exit, one-hot
    pop1: Subspace  # the level a pop resumes with this step's exit, one-hot
    pop0_none: int  # dim: no level to pop to (without this step's exit)
    pop1_none: int  # dim: no level to pop to (with this step's exit)
    pop_pc: list  # [without, with this step's exit]: the popped entry's pc
    pop_mask: list  # [without, with this step's exit]: the popped entry's live lanes


class EarlyControl:
    """The early half's gates, from the context, the fetch and the control state."""

    def __init__(self, cw: CircuitWiring, ctx: Context, fetched: Fetch, state: ControlState):
        self.cw = cw  # the plan it places its gates in
        self.ctx = ctx  # the running warp, its mask, the launch geometry
        self.fetch = fetched  # the terminator's fields and decoders, the predicate file
        self.state = state  # the warp statuses, the running warp's stack entries, the existing lanes
        self.W, self.N = cw.m.max_warps, cw.m.lanes
        self.ST, self.EN, _, self.P = record_layouts(cw.m)  # status row, stack entry, bits of a pc

    def g(self, L, name, terms, theta, outputs):
        return self.cw.gate(L, name, terms, theta, outputs)

    def a(self, name, w):
        return self.cw.alloc(name, w)

    def build(self, L: int) -> Candidates:
        """Everything the step's outcome may need that the branch predicate does not: 7 layers from ``L``.

        They run beside the first slot, so when the last slot knows the predicate the
        late half only picks among ready candidates: the running warp's depth and exited
        lanes, the top entry's reconvergence point, the pop candidates with and without
        this step's exit, the next ready or waiting warp, the push levels, deadlock tests.
        """
        E0, E1, E2, E3, E4, E5, E6 = (L + i for i in range(7))
        depth, exited, ready_other, wait_other = self.running_warp_status(E0)
        pc_xor_rpc, xFR, xTR = self.pc_xors(E0)
        xdl = self.deadlock_xors(E1)
        rpc, rpc_valid, lm0, lm1, pcrpc = self.top_entry(E1, depth, exited, pc_xor_rpc)
        fall_is_r, targ_is_r = self.reconvergence_targets(E1, xFR, xTR)
        any_ready, any_waiting, next_ready, next_waiting, next_released = self.next_warps(E1, ready_other, wait_other)
        xT, xF, xR, xv = self.target_xors(E2, rpc, rpc_valid)
        live0, live1 = self.live_levels(E2, lm0, lm1)
        bad = self.bad_waiting_warps(E2, xdl, wait_other)
        xme = self.barrier_mask(E1, E2, exited)
        reach_t, reach_f, same_rpc = self.reach_tests(E3, xT, xF, xR, xv, rpc_valid)
        valid0, valid1 = self.valid_pop_levels(E3, live0, live1, pcrpc)
        dead_other, dead_running = self.deadlock_flags(E3, bad, xme)
        g0, g1 = self.pop_candidates(E4, valid0, valid1, depth)
        base = self.push_base(E4, depth, same_rpc)
        pop0, pop1, pop0_none, pop1_none = self.pop_selection(E5, g0, g1)
        level_taken = self.taken_level(E5, base, fall_is_r)
        pop_pc, pop_mask = self.pop_resume(E6, pop0, pop1, exited)
        return Candidates(E6 + 1, depth, exited, wait_other, rpc, rpc_valid, fall_is_r, targ_is_r, any_ready,
                          any_waiting, next_ready, next_waiting, next_released, reach_t, reach_f, same_rpc,
                          dead_other, dead_running, base, level_taken, pop0, pop1, pop0_none, pop1_none, pop_pc,
                          pop_mask)

    def xor(self, layer: int, name: str, x: int, y: int, out: int) -> None:
        """``out`` += x XOR y (two gates)."""
        self.g(layer, name + ".a", [(x, 1), (y, -1)], 1, [(out, 1)])
        self.g(layer, name + ".b", [(x, -1), (y, 1)], 1, [(out, 1)])

    def running_warp_status(self, E0: int) -> tuple:
        """The running warp's stack depth and exited lanes; which other warps are ready or waiting."""
        W, N, st, w1 = self.W, self.N, self.state.status, self.ctx.warp
        depth = self.a("ctl.depth", D)
        exited = self.a("ctl.exited", N)
        for w in range(W):
            for k in range(D):
                self.g(E0, f"ctl.d.w{w}k{k}", [(w1[w], 1), (st[w][self.ST.depth[k]], 1)], 2, [(depth[k], 1)])
            for lane in range(N):
                self.g(E0, f"ctl.ex.w{w}l{lane}", [(w1[w], 1), (st[w][self.ST.exited[lane]], 1)], 2,
                       [(exited[lane], 1)])
        ready_other = self.a("ctl.ready_other", W)
        wait_other = self.a("ctl.wait_other", W)
        for w in range(W):
            self.g(E0, f"ctl.rdy.w{w}", [(st[w][self.ST.ready[0]], 1), (self.state.exist[w][0], 1), (w1[w], -1)], 2,
                   [(ready_other[w], 1)])
            self.g(E0, f"ctl.wt.w{w}", [(st[w][self.ST.wait[0]], 1), (w1[w], -1)], 1, [(wait_other[w], 1)])
        return depth, exited, ready_other, wait_other

    def pc_xors(self, E0: int) -> tuple:
        """pc XOR rpc of every stack level; fallthrough and target XOR the reconvergence point."""
        P, en, tf = self.P, self.state.entry, self.fetch.term
        pc_xor_rpc = [self.a(f"ctl.xpr{k}", P) for k in range(D)]
        for k in range(D):
            for i in range(P):
                self.xor(E0, f"ctl.xpr{k}.{i}", en[k][self.EN.pc[i]], en[k][self.EN.rpc[i]], pc_xor_rpc[k][i])
        xFR, xTR = self.a("ctl.xFR", P), self.a("ctl.xTR", P)
        for i in range(P):
            self.xor(E0, f"ctl.xFR{i}", tf["fallthrough"][i], tf["reconv"][i], xFR[i])
            self.xor(E0, f"ctl.xTR{i}", tf["target"][i], tf["reconv"][i], xTR[i])
        return pc_xor_rpc, xFR, xTR

    def deadlock_xors(self, E1: int):
        """Per warp and lane: its barrier mask differs from its live lanes (the deadlock test)."""
        W, N, st = self.W, self.N, self.state.status
        xdl = self.a("ctl.xdl", W * N)
        for w in range(W):
            for lane in range(N):
                live = [(self.state.exist[w][lane], 1), (st[w][self.ST.exited[lane]], -1)]
                r = st[w][self.ST.mask[lane]]
                self.g(E1, f"ctl.xdl{w}{lane}.a", [(r, 1)] + [(d, -c) for d, c in live], 1, [(xdl[w * N + lane], 1)])
                self.g(E1, f"ctl.xdl{w}{lane}.b", [(r, -1)] + live, 1, [(xdl[w * N + lane], 1)])
        return xdl

    def top_entry(self, E1: int, depth, exited, pc_xor_rpc) -> tuple:
        """The top entry's rpc; per level its lanes still alive (without / with this step's exit) and pc == rpc."""
        P, N, en = self.P, self.N, self.state.entry
        rpc = self.a("ctl.rpc_top", P)
        rpc_valid = self.a("ctl.rval_top", 1)[0]
        for k in range(D):
            for i in range(P):
                self.g(E1, f"ctl.rpc{k}.{i}", [(depth[k], 1), (en[k][self.EN.rpc[i]], 1)], 2, [(rpc[i], 1)])
            self.g(E1, f"ctl.rval{k}", [(depth[k], 1), (en[k][self.EN.rvalid[0]], 1)], 2, [(rpc_valid, 1)])
        lm0 = [self.a(f"ctl.lm0.{k}", N) for k in range(D)]
        lm1 = [self.a(f"ctl.lm1.{k}", N) for k in range(D)]
        for k in range(D):
            for lane in range(N):
                mk = en[k][self.EN.mask[lane]]
                self.g(E1, f"ctl.lm0.{k}{lane}", [(mk, 1), (exited[lane], -1)], 1, [(lm0[k][lane], 1)])
                self.g(E1, f"ctl.lm1.{k}{lane}", [(mk, 1), (exited[lane], -1), (self.ctx.mask[lane], -1)], 1,
                       [(lm1[k][lane], 1)])
        pcrpc = self.a("ctl.pcrpc", D)
        for k in range(D):
            self.g(E1, f"ctl.pcrpc{k}", [(en[k][self.EN.rvalid[0]], 1)] + [(x, -1) for x in pc_xor_rpc[k].dims], 1,
                   [(pcrpc[k], 1)])
        return rpc, rpc_valid, lm0, lm1, pcrpc

    def reconvergence_targets(self, E1: int, xFR, xTR) -> tuple:
        """The fallthrough, the target is the reconvergence point (no stack entry for that side)."""
        rv = self.fetch.term["reconv_valid"][0]
        fall_is_r = self.a("ctl.fallIsR", 1)[0]
        targ_is_r = self.a("ctl.targIsR", 1)[0]
        self.g(E1, "ctl.fallIsR", [(rv, 1)] + [(x, -1) for x in xFR.dims], 1, [(fall_is_r, 1)])
        self.g(E1, "ctl.targIsR", [(rv, 1)] + [(x, -1) for x in xTR.dims], 1, [(targ_is_r, 1)])
        return fall_is_r, targ_is_r

    def next_warps(self, E1: int, ready_other, wait_other) -> tuple:
        """Any other warp ready, waiting; the lowest ready, the lowest waiting, the lowest to release."""
        W, w1 = self.W, self.ctx.warp
        any_ready = self.a("ctl.other_ready", 1)[0]
        any_waiting = self.a("ctl.other_wait", 1)[0]
        self.g(E1, "ctl.other_ready", [(x, 1) for x in ready_other.dims], 1, [(any_ready, 1)])
        self.g(E1, "ctl.other_wait", [(x, 1) for x in wait_other.dims], 1, [(any_waiting, 1)])
        next_ready = self.a("ctl.schedR", W)  # lowest ready warp other than the running one
        next_waiting = self.a("ctl.schedW", W)  # lowest waiting warp other than the running one
        next_released = self.a("ctl.relW", W)  # lowest of {running warp} + waiting others
        for w in range(W):
            self.g(E1, f"ctl.schedR{w}", [(ready_other[w], 1)] + [(ready_other[v], -1) for v in range(w)], 1,
                   [(next_ready[w], 1)])
            self.g(E1, f"ctl.schedW{w}", [(wait_other[w], 1)] + [(wait_other[v], -1) for v in range(w)], 1,
                   [(next_waiting[w], 1)])
            terms = [(w1[w], 1), (wait_other[w], 1)] + [(w1[v], -1) for v in range(w)] + \
                    [(wait_other[v], -1) for v in range(w)]
            self.g(E1, f"ctl.relW{w}", terms, 1, [(next_released[w], 1)])
        return any_ready, any_waiting, next_ready, next_waiting, next_released

    def target_xors(self, E2: int, rpc, rpc_valid) -> tuple:
        """Target, fallthrough, reconvergence point (and its valid bit) XOR the top entry's rpc."""
        P, tf = self.P, self.fetch.term
        xT, xF, xR = self.a("ctl.xT", P), self.a("ctl.xF", P), self.a("ctl.xR", P)
        xv = self.a("ctl.xv", 1)[0]
        for i in range(P):
            self.xor(E2, f"ctl.xT{i}", tf["target"][i], rpc[i], xT[i])
            self.xor(E2, f"ctl.xF{i}", tf["fallthrough"][i], rpc[i], xF[i])
            self.xor(E2, f"ctl.xR{i}", tf["reconv"][i], rpc[i], xR[i])
        self.xor(E2, "ctl.xv", tf["reconv_valid"][0], rpc_valid, xv)
        return xT, xF, xR, xv

    def live_levels(self, E2: int, lm0, lm1) -> tuple:
        """Per level: some lane of its mask is still alive (without / with this step's exit)."""
        live0, live1 = self.a("ctl.live0", D), self.a("ctl.live1", D)
        for k in range(D):
            self.g(E2, f"ctl.live0.{k}", [(x, 1) for x in lm0[k].dims], 1, [(live0[k], 1)])
            self.g(E2, f"ctl.live1.{k}", [(x, 1) for x in lm1[k].dims], 1, [(live1[k], 1)])
        return live0, live1

    def bad_waiting_warps(self, E2: int, xdl, wait_other):
        """Per other warp: it waits at a barrier with a mask that is not all its live lanes."""
        W, N = self.W, self.N
        bad = self.a("ctl.bad_other", W)
        for w in range(W):
            self.g(E2, f"ctl.bad{w}", [(wait_other[w], N)] + [(xdl[w * N + lane], 1) for lane in range(N)], N + 1,
                   [(bad[w], 1)])
        return bad

    def barrier_mask(self, E1: int, E2: int, exited):
        """The running warp at a barrier: per lane, a live lane outside its mask."""
        W, N, w1 = self.W, self.N, self.ctx.warp
        existme = self.a("ctl.exist_me", N)
        for lane in range(N):
            for w in range(W):
                self.g(E1, f"ctl.existme{lane}.w{w}", [(w1[w], 1), (self.state.exist[w][lane], 1)], 2, [(existme[lane], 1)])
        xme = self.a("ctl.xme", N)
        for lane in range(N):  # a live lane outside the mask
            self.g(E2, f"ctl.xme{lane}", [(existme[lane], 1), (exited[lane], -1), (self.ctx.mask[lane], -1)], 1,
                   [(xme[lane], 1)])
        return xme

    def reach_tests(self, E3: int, xT, xF, xR, xv, rpc_valid) -> tuple:
        """Target, fallthrough reach the top entry's reconvergence point; it equals the terminator's."""
        reach_t, reach_f, same_rpc = (self.a("ctl.reachT", 1)[0], self.a("ctl.reachF", 1)[0],
                                              self.a("ctl.eqR", 1)[0])
        self.g(E3, "ctl.reachT", [(rpc_valid, 1)] + [(x, -1) for x in xT.dims], 1, [(reach_t, 1)])
        self.g(E3, "ctl.reachF", [(rpc_valid, 1)] + [(x, -1) for x in xF.dims], 1, [(reach_f, 1)])
        self.g(E3, "ctl.eqR", [(x, -1) for x in xR.dims] + [(xv, -1)], 0, [(same_rpc, 1)])
        return reach_t, reach_f, same_rpc

    def valid_pop_levels(self, E3: int, live0, live1, pcrpc) -> tuple:
        """Per level: a pop may resume it (lanes alive, not already at its reconvergence point)."""
        valid0, valid1 = self.a("ctl.valid0", D), self.a("ctl.valid1", D)
        for k in range(D):
            self.g(E3, f"ctl.valid0.{k}", [(live0[k], 1), (pcrpc[k], -1)], 1, [(valid0[k], 1)])
            self.g(E3, f"ctl.valid1.{k}", [(live1[k], 1), (pcrpc[k], -1)], 1, [(valid1[k], 1)])
        return valid0, valid1

    def deadlock_flags(self, E3: int, bad, xme) -> tuple:
        """Some other waiting warp, or the running warp at its barrier, can never be released."""
        dead_other = self.a("ctl.dead_other", 1)[0]
        dead_running = self.a("ctl.dead_me", 1)[0]
        self.g(E3, "ctl.dead_other", [(x, 1) for x in bad.dims], 1, [(dead_other, 1)])
        self.g(E3, "ctl.dead_me", [(x, 1) for x in xme.dims], 1, [(dead_running, 1)])
        return dead_other, dead_running

    def pop_candidates(self, E4: int, valid0, valid1, depth) -> tuple:
        """Per level below the top: a valid pop target (without / with this step's exit)."""
        g0, g1 = self.a("ctl.g0", D), self.a("ctl.g1", D)
        for k in range(D):
            above = [(depth[j], 1) for j in range(k + 1, D)]
            self.g(E4, f"ctl.g0.{k}", [(valid0[k], 1)] + above, 2, [(g0[k], 1)])
            self.g(E4, f"ctl.g1.{k}", [(valid1[k], 1)] + above, 2, [(g1[k], 1)])
        return g0, g1

    def push_base(self, E4: int, depth, same_rpc) -> Subspace:
        """The level of the other side's entry on divergence: the running entry's own if the branch
        reconverges where it does (no reconvergence entry: GPGPU-Sim's compaction), else one up."""
        base = self.a("ctl.base", D + 1)
        for k in range(D + 1):
            if k < D:
                self.g(E4, f"ctl.base.same{k}", [(depth[k], 1), (same_rpc, 1)], 2, [(base[k], 1)])
            if k >= 1:
                self.g(E4, f"ctl.base.up{k}", [(depth[k - 1], 1), (same_rpc, -1)], 1, [(base[k], 1)])
        return base

    def pop_selection(self, E5: int, g0, g1) -> tuple:
        """The highest valid pop target (without / with this step's exit), or none."""
        pop0, pop1 = self.a("ctl.pop0", D), self.a("ctl.pop1", D)
        pop0_none, pop1_none = self.a("ctl.pop0none", 1)[0], self.a("ctl.pop1none", 1)[0]
        for k in range(D):
            self.g(E5, f"ctl.pop0.{k}", [(g0[k], 1)] + [(g0[j], -1) for j in range(k + 1, D)], 1, [(pop0[k], 1)])
            self.g(E5, f"ctl.pop1.{k}", [(g1[k], 1)] + [(g1[j], -1) for j in range(k + 1, D)], 1, [(pop1[k], 1)])
        self.g(E5, "ctl.pop0none", [(x, -1) for x in g0.dims], 0, [(pop0_none, 1)])
        self.g(E5, "ctl.pop1none", [(x, -1) for x in g1.dims], 0, [(pop1_none, 1)])
        return pop0, pop1, pop0_none, pop1_none

    def taken_level(self, E5: int, base, fall_is_r) -> Subspace:
        """The level of the taken side's entry: the base if the fallthrough side needs no entry (it starts
        at the reconvergence point), else one above it."""
        level_taken = self.a("ctl.level_taken", D + 2)
        for k in range(D + 2):
            if k < D + 1:
                self.g(E5, f"ctl.lt.same{k}", [(base[k], 1), (fall_is_r, 1)], 2, [(level_taken[k], 1)])
            if k >= 1:
                self.g(E5, f"ctl.lt.up{k}", [(base[k - 1], 1), (fall_is_r, -1)], 1, [(level_taken[k], 1)])
        return level_taken

    def pop_resume(self, E6: int, pop0, pop1, exited) -> tuple:
        """What a pop (without / with this step's exit) resumes: the entry's pc and its live lanes."""
        P, N, en = self.P, self.N, self.state.entry
        pop_pc = [self.a(f"ctl.popPC{v}", P) for v in range(2)]
        pop_mask = [self.a(f"ctl.popMask{v}", N) for v in range(2)]
        for v, sel in enumerate((pop0, pop1)):
            for k in range(D):
                for i in range(P):
                    self.g(E6, f"ctl.popPC{v}.{k}.{i}", [(sel[k], 1), (en[k][self.EN.pc[i]], 1)], 2,
                           [(pop_pc[v][i], 1)])
                for lane in range(N):
                    terms = [(sel[k], 1), (en[k][self.EN.mask[lane]], 1), (exited[lane], -1)]
                    if v == 1:
                        terms.append((self.ctx.mask[lane], -1))
                    self.g(E6, f"ctl.popMask{v}.{k}.{lane}", terms, 2, [(pop_mask[v][lane], 1)])
        return pop_pc, pop_mask
