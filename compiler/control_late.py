"""The control unit's late half: after the last slot knows the branch predicate, the step's outcome.

It picks the event among the early half's :class:`~compiler.control_early.Candidates`
(continue, pop, diverge, barrier, exit, warp done, thread block done, a fault) and writes
the step's records: the next EXEC / CTA / STOP / FAULT token, the WST records of the
warps it changed and the ENT records of a divergence, and the final predicate file. It
returns them as :class:`StepRecords` for the latch stage.
"""

from __future__ import annotations

from dataclasses import dataclass

from qwengpu_mlx.core.encoding import PSRC_FILE, PSRC_FWD
from qwengpu_mlx.core.isa import TermKind
from qwengpu_mlx.core.records import NEXT_KINDS
from qwengpu_mlx.core.vocab import ENT_ITEMS, MAX_GRID

from qwengpu_mlx.compiler.context import Context
from qwengpu_mlx.compiler.control import D, LEVEL_BITS, ControlState, record_layouts, status_heads
from qwengpu_mlx.compiler.control_early import Candidates
from qwengpu_mlx.compiler.fetch import Fetch
from qwengpu_mlx.compiler.residual import Subspace
from qwengpu_mlx.compiler.wiring import CircuitWiring


@dataclass(frozen=True)
class StepRecords:
    """The step's outcome as dims, for the latches: the next token and the records it writes."""

    pfin: list  # per lane: the final predicate file
    next_block: Subspace  # the next EXEC's block, binary
    next_warp: Subspace  # the next EXEC's warp, binary
    next_mask: Subspace  # the next EXEC's lane mask
    next_kind: dict  # next token kind (``records.NEXT_KINDS``) -> dim
    next_cta: Subspace  # the next thread block's id, binary
    wst: list  # per warp: its WST record's bits
    wst_present: Subspace  # per warp: it has a WST record this step
    ent: list  # per ENT item: its pc, rpc (+ valid), mask bits
    ent_level: list  # per ENT item: its level, binary
    ent_present: Subspace  # per ENT item: it is pushed this step


class LateControl:
    """The late half's gates, from the context, the fetch, the control state and the early candidates."""

    def __init__(self, cw: CircuitWiring, ctx: Context, fetched: Fetch, state: ControlState, cand: Candidates):
        self.cw = cw  # the plan it places its gates in
        self.ctx = ctx  # the running warp, its mask, the launch geometry
        self.fetch = fetched  # the terminator's fields and decoders, the predicate file
        self.state = state  # the warp statuses, the running warp's stack entries, the existing lanes
        self.m = cw.m
        self.W, self.N = cw.m.max_warps, cw.m.lanes
        self.ST, self.EN, self.NX, self.P = record_layouts(cw.m)  # status row, stack entry, next token, pc bits
        self.cand = cand  # what the early half made

    def g(self, L, name, terms, theta, outputs):
        return self.cw.gate(L, name, terms, theta, outputs)

    def a(self, name, w):
        return self.cw.alloc(name, w)

    def build(self, L: int, slots: list) -> tuple[StepRecords, int]:
        """The branch outcome, the event and the step's records from ``L`` (after the early half and
        the last slot); (the records, the layer after them)."""
        L = max(L, self.cand.end)
        C1, C2, C3, C4, C5 = (L + 1 + i for i in range(5))
        self.status = self.late_status(L, C5)
        bp = self.predicates(L, slots)
        tb, fb = self.branch_sides(C1, C2, bp)
        go_t, go_f, reach, cont, div = self.events(C3, tb, fb)
        self.A = self.actions(C4, reach, cont, div)
        self.jt = self.continue_block(C4, go_t, go_f)
        self.scheduling(C5)
        L = self.outputs(C5 + 1, slots)
        return StepRecords(self.pfin, self.nb, self.nw, self.nm, self.nk, self.next_cta, self.wst, self.wst_present,
                           self.ent, self.ent_level, self.ent_present), L

    def late_status(self, L: int, first_read: int) -> list:
        """The warp statuses the scheduling and the records read (at MLP ``first_read`` on):
        the state heads' rows, or, in the form with the fewest residual dims, a second copy
        of the status heads just below (``control.status_heads``), so that the status rows
        (23 bits per warp) do not sit in the residual through every slot."""
        if not self.cw.fewest_dims:
            return self.state.status
        at = self.cw.linear_with_room(L, self.W)
        return status_heads(self.cw, at, "status.late") if at <= first_read else self.state.status

    def predicates(self, L: int, slots: list) -> list:
        """The final predicate file (``self.pfin``) and, per lane, the branch predicate (returned), MLP ``L``:
        each from the predicate file or an earlier slot's predicate result."""
        m, N, fe = self.m, self.N, self.fetch
        self.pfin = [self.a(f"pfin.lane{lane}", m.preds) for lane in range(N)]
        bp = [self.a(f"bp.lane{lane}", 1)[0] for lane in range(N)]
        neg = fe.term["pred_neg"][0]
        for lane in range(N):
            sources = [(PSRC_FILE + i, fe.pfile[lane][i]) for i in range(m.preds)]
            sources += [(PSRC_FWD + k, io.pres[lane]) for k, io in enumerate(slots)]
            for p in range(m.preds):
                for code, dim in sources:
                    self.g(L, f"pfin.l{lane}p{p}c{code}", [(fe.pfinal_src[p][code], 1), (dim, 1)], 2,
                           [(self.pfin[lane][p], 1)])
            for code, dim in sources:
                self.g(L, f"bp.l{lane}c{code}p", [(fe.term_pred[code], 1), (dim, 1), (neg, -1)], 2, [(bp[lane], 1)])
                self.g(L, f"bp.l{lane}c{code}n", [(fe.term_pred[code], 1), (dim, -1), (neg, 1)], 2, [(bp[lane], 1)])
        return bp

    def branch_sides(self, C1: int, C2: int, bp: list) -> tuple:
        """Taken and not-taken lanes (``m_t``, ``m_nt``, MLP ``C1``); (any taken, any not taken), MLP ``C2``."""
        N = self.N
        taken_n, fall_n = self.a("ctl.taken_n", 1)[0], self.a("ctl.fall_n", 1)[0]
        self.m_t, self.m_nt = self.a("ctl.mask_taken", N), self.a("ctl.mask_fall", N)
        for lane in range(N):
            mask = self.ctx.mask[lane]
            self.g(C1, f"ctl.mt{lane}", [(mask, 1), (bp[lane], 1)], 2, [(self.m_t[lane], 1), (taken_n, 1)])
            self.g(C1, f"ctl.mnt{lane}", [(mask, 1), (bp[lane], -1)], 1, [(self.m_nt[lane], 1), (fall_n, 1)])
        tb, fb = self.a("ctl.tb", 1)[0], self.a("ctl.fb", 1)[0]
        self.g(C2, "ctl.tb", [(taken_n, 1)], 1, [(tb, 1)])
        self.g(C2, "ctl.fb", [(fall_n, 1)], 1, [(fb, 1)])
        return tb, fb

    def events(self, C3: int, tb: int, fb: int) -> tuple:
        """(go to the target, go to the fallthrough, reach the reconvergence point, continue, diverge), MLP ``C3``."""
        K, rt, rf = self.fetch.term_kind, self.cand.reach_t, self.cand.reach_f
        br, jmp, bar = K[TermKind.BRANCH], K[TermKind.JUMP], K[TermKind.BARRIER]
        go_t, go_f = self.a("ctl.go_t", 1)[0], self.a("ctl.go_f", 1)[0]
        reach, cont, div = self.a("ctl.reach", 1)[0], self.a("ctl.cont", 1)[0], self.a("ctl.div", 1)[0]
        self.g(C3, "ctl.go_t.j", [(jmp, 1), (bar, 1)], 1, [(go_t, 1)])
        self.g(C3, "ctl.go_t.b", [(br, 1), (tb, 1), (fb, -1)], 2, [(go_t, 1)])
        self.g(C3, "ctl.go_f", [(br, 1), (fb, 1), (tb, -1)], 2, [(go_f, 1)])
        self.g(C3, "ctl.reach.j", [(jmp, 1), (rt, 1)], 2, [(reach, 1)])
        self.g(C3, "ctl.reach.t", [(br, 1), (tb, 1), (fb, -1), (rt, 1)], 3, [(reach, 1)])
        self.g(C3, "ctl.reach.f", [(br, 1), (fb, 1), (tb, -1), (rf, 1)], 3, [(reach, 1)])
        self.g(C3, "ctl.cont.j", [(jmp, 1), (rt, -1)], 1, [(cont, 1)])
        self.g(C3, "ctl.cont.t", [(br, 1), (tb, 1), (fb, -1), (rt, -1)], 2, [(cont, 1)])
        self.g(C3, "ctl.cont.f", [(br, 1), (fb, 1), (tb, -1), (rf, -1)], 2, [(cont, 1)])
        self.g(C3, "ctl.div", [(br, 1), (tb, 1), (fb, 1)], 3, [(div, 1)])
        return go_t, go_f, reach, cont, div

    def actions(self, C4: int, reach: int, cont: int, div: int) -> dict:
        """The step's action, one dim each (MLP ``C4``; ``sched``, ``release``, ``ctadone`` and ``dead``
        are written by ``scheduling``), including a stack overflow on divergence."""
        c, K = self.cand, self.fetch.term_kind
        bar, ext = K[TermKind.BARRIER], K[TermKind.EXIT]
        A = {k: self.a(f"ctl.A.{k}", 1)[0] for k in
             ("cont", "pop0", "pop1", "done", "bar", "div", "sched", "release", "ctadone", "dead", "ovf")}
        self.g(C4, "ctl.A.cont", [(cont, 1)], 1, [(A["cont"], 1)])
        self.g(C4, "ctl.A.pop0", [(reach, 1), (c.pop0_none, -1)], 1, [(A["pop0"], 1)])
        self.g(C4, "ctl.A.pop1", [(ext, 1), (c.pop1_none, -1)], 1, [(A["pop1"], 1)])
        self.g(C4, "ctl.A.done.r", [(reach, 1), (c.pop0_none, 1)], 2, [(A["done"], 1)])
        self.g(C4, "ctl.A.done.e", [(ext, 1), (c.pop1_none, 1)], 2, [(A["done"], 1)])
        self.g(C4, "ctl.A.bar", [(bar, 1)], 1, [(A["bar"], 1)])
        self.g(C4, "ctl.A.div", [(div, 1)], 1, [(A["div"], 1)])
        # overflow of the stack on divergence
        self.g(C4, "ctl.ovf.a", [(div, 1), (c.depth[D - 1], 1), (c.same_rpc, -1)], 2, [(A["ovf"], 1)])
        self.g(C4, "ctl.ovf.b", [(div, 1), (c.base[D], 1), (c.targ_is_r, -1)], 2, [(A["ovf"], 1)])
        self.g(C4, "ctl.ovf.c", [(div, 1), (c.level_taken[D], 1), (c.targ_is_r, -1)], 2, [(A["ovf"], 1)])
        self.g(C4, "ctl.ovf.d", [(div, 1), (c.level_taken[D + 1], 1), (c.targ_is_r, -1)], 2, [(A["ovf"], 1)])
        return A

    def continue_block(self, C4: int, go_t: int, go_f: int):
        """The next block when the warp continues: the target or the fallthrough (MLP ``C4``)."""
        tf = self.fetch.term
        jt = self.a("ctl.jt", self.P)
        for i in range(self.P):
            self.g(C4, f"ctl.jt.t{i}", [(go_t, 1), (tf["target"][i], 1)], 2, [(jt[i], 1)])
            self.g(C4, f"ctl.jt.f{i}", [(go_f, 1), (tf["fallthrough"][i], 1)], 2, [(jt[i], 1)])
        return jt

    def scheduling(self, C5: int) -> None:
        """After the running warp stops: switch, release a barrier, finish the thread block, or deadlock (MLP ``C5``)."""
        A, c = self.A, self.cand
        self.g(C5, "ctl.A.sched", [(A["bar"], 1), (A["done"], 1), (c.any_ready, 1)], 2, [(A["sched"], 1)])
        self.g(C5, "ctl.A.release.b", [(A["bar"], 1), (c.any_ready, -1)], 1, [(A["release"], 1)])
        self.g(C5, "ctl.A.release.d", [(A["done"], 1), (c.any_ready, -1), (c.any_waiting, 1)], 2,
               [(A["release"], 1)])
        self.g(C5, "ctl.A.ctadone", [(A["done"], 1), (c.any_ready, -1), (c.any_waiting, -1)], 1,
               [(A["ctadone"], 1)])
        self.g(C5, "ctl.A.dead.b", [(A["bar"], 1), (c.any_ready, -1), (c.dead_other, 1)], 2, [(A["dead"], 1)])
        self.g(C5, "ctl.A.dead.m", [(A["bar"], 1), (c.any_ready, -1), (c.dead_running, 1)], 2, [(A["dead"], 1)])
        self.g(C5, "ctl.A.dead.d", [(A["done"], 1), (c.any_ready, -1), (c.dead_other, 1)], 2, [(A["dead"], 1)])

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
        self.put_next(O1, "nx.pop0", [(A["pop0"], 1)], self.cand.pop_pc[0], w1, self.cand.pop_mask[0])
        self.put_next(O1, "nx.pop1", [(A["pop1"], 1)], self.cand.pop_pc[1], w1, self.cand.pop_mask[1])
        # divergence: the taken side if it is not the reconvergence point, else the other side
        self.put_next(O1, "nx.div.t", [(A["div"], 1), (self.cand.targ_is_r, -1)], tf["target"], w1, self.m_t)
        self.put_next(O1, "nx.div.f", [(A["div"], 1), (self.cand.targ_is_r, 1)], tf["fallthrough"], w1, self.m_nt)
        self.next_exec_switch(O1)
        self.next_exec_release(O1)

    def next_exec_switch(self, O1: int) -> None:
        """After a stop of the running warp: the lowest other ready warp, where its status says it resumes."""
        A, st, NX = self.A, self.status, self.NX
        for w in range(self.W):
            cond = [(A["sched"], 1), (self.cand.next_ready[w], 1)]
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
            cond = [(A["release"], 1), (A["bar"], 1), (self.cand.next_released[w], 1), (w1[w], 1)]
            self.put_next(O1, f"nx.relme{w}", cond, tf["target"], None, self.ctx.mask)
            cond_o = [(A["release"], 1), (A["bar"], 1), (self.cand.next_released[w], 1), (w1[w], -1)]
            self.put_next(O1, f"nx.relo{w}", cond_o, [st[w][self.ST.pc[i]] for i in range(NX.block.width)], None,
                          [st[w][self.ST.mask[lane]] for lane in range(self.N)])
            for i in range(NX.warp.width):
                if w >> i & 1:
                    self.g(O1, f"nx.rel{w}.w{i}", [(A["release"], 1), (A["bar"], 1), (self.cand.next_released[w], 1)], 3,
                           [(self.nw[i], 1)])
            # release after the runner finished: the lowest waiting warp
            cond_d = [(A["release"], 1), (A["done"], 1), (self.cand.next_waiting[w], 1)]
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
            self.g(O1, f"wst{w}.ex.{lane}", [me, (self.cand.exited[lane], 1)], 2, [(o[ST.exited[lane]], 1)])
            self.g(O1, f"wst{w}.exm.{lane}", [me, (self.fetch.term_kind[TermKind.EXIT], 1), (self.ctx.mask[lane], 1),
                                             (self.cand.exited[lane], -1)], 3, [(o[ST.exited[lane]], 1)])
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
            self.g(O1, f"wst{w}.d.pop0.{k}", [me, (A["pop0"], 1), (self.cand.pop0[k], 1)], 3, [(o[depth[k]], 1)])
            self.g(O1, f"wst{w}.d.pop1.{k}", [me, (A["pop1"], 1), (self.cand.pop1[k], 1)], 3, [(o[depth[k]], 1)])
            self.g(O1, f"wst{w}.d.bar.{k}", [me, (A["bar"], 1), (self.cand.depth[k], 1)], 3, [(o[depth[k]], 1)])
            # divergence: the top is the taken level, or the base if only the other side runs
            divt = [me, (A["div"], 1), (self.cand.targ_is_r, -1), (self.cand.level_taken[k], 1)]
            self.g(O1, f"wst{w}.d.divt.{k}", divt, 3, [(o[depth[k]], 1)])
            self.g(O1, f"wst{w}.d.divf.{k}", [me, (A["div"], 1), (self.cand.targ_is_r, 1), (self.cand.base[k], 1)], 4,
                   [(o[depth[k]], 1)])

    def wst_released(self, O1: int, w: int) -> None:
        """Warp ``w``'s WST record if another warp's barrier released it: ready, the rest unchanged."""
        A, o, st = self.A, self.wst[w], self.status
        rel = [(self.ctx.warp[w], -1), (A["release"], 1), (self.cand.wait_other[w], 1)]
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
        self.g(O1, "ent0.pr", dv + [(self.cand.same_rpc, -1)], 1, [(self.ent_present[0], 1)])
        self.g(O1, "ent1.pr", dv + [(self.cand.fall_is_r, -1)], 1, [(self.ent_present[1], 1)])
        self.g(O1, "ent2.pr", dv + [(self.cand.targ_is_r, -1)], 1, [(self.ent_present[2], 1)])
        for k, onehot in enumerate((self.cand.depth, self.cand.base, self.cand.level_taken)):
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
            self.g(O1, f"ent0.rpc{i}", dv + [(self.cand.rpc[i], 1)], 2, [(e0[EN.rpc[i]], 1)])
            self.g(O1, f"ent1.pc{i}", dv + [(tf["fallthrough"][i], 1)], 2, [(e1[EN.pc[i]], 1)])
            self.g(O1, f"ent2.pc{i}", dv + [(tf["target"][i], 1)], 2, [(e2[EN.pc[i]], 1)])
            for e in (e1, e2):
                self.g(O1, f"ent.R{i}.{e.name}", dv + [(tf["reconv"][i], 1)], 2, [(e[EN.rpc[i]], 1)])
        self.g(O1, "ent0.rv", dv + [(self.cand.rpc_valid, 1)], 2, [(e0[EN.rvalid[0]], 1)])
        for e in (e1, e2):
            self.g(O1, f"ent.rv.{e.name}", dv + [(rv, 1)], 2, [(e[EN.rvalid[0]], 1)])
        for lane in range(self.N):
            self.g(O1, f"ent0.m{lane}", dv + [(self.ctx.mask[lane], 1)], 2, [(e0[EN.mask[lane]], 1)])
            self.g(O1, f"ent1.m{lane}", dv + [(self.m_nt[lane], 1)], 2, [(e1[EN.mask[lane]], 1)])
            self.g(O1, f"ent2.m{lane}", dv + [(self.m_t[lane], 1)], 2, [(e2[EN.mask[lane]], 1)])
