"""The emit stage: the next token, from the current one and the latches.

The passes after an EXEC walk the records the latches hold, one token per pass: VAL,
VALU, PVAL, MEM, ENT and WST records, chunk by chunk, then the latched next token (EXEC,
CTA, STOP or FAULT). A thread block's start (a CTA token) emits every warp's initial WST
record, then ``EXEC(0, 0, lanes of warp 0)``. docs/CIRCUIT.md, "Pass layout", item 4.
"""

from __future__ import annotations

from qwengpu_mlx.core.records import ent_layout, next_layout, wst_layout
from qwengpu_mlx.core.vocab import CHUNK_BITS, CHUNK_SHIFT, ENT_ITEMS

from qwengpu_mlx.compiler.context import Context
from qwengpu_mlx.compiler.control import LEVEL_BITS
from qwengpu_mlx.compiler.fetch import Fetch
from qwengpu_mlx.compiler.latch import Latches
from qwengpu_mlx.compiler.residual import BIT
from qwengpu_mlx.compiler.slot import mem_word_bits
from qwengpu_mlx.compiler.tokens import OUT_GAIN
from qwengpu_mlx.compiler.wiring import CircuitWiring


class EmitStage:
    """The emission gates (4 MLPs), given the context, every slot's decode, the lanes that exist and the latches."""

    def __init__(self, cw: CircuitWiring, ctx: Context, fetched: Fetch, decodes: list, exist: list,
                 latches: Latches):
        self.cw = cw  # the plan its gates go into
        self.ctx = ctx  # the current token's context: the open record header, the phase, the mask
        self.fetch = fetched  # the terminator's fields, the first lane, the open VALU header
        self.decodes = decodes  # per slot: its fields (whether it emits)
        self.exist = exist  # per warp: its existing lanes (a thread block's start)
        self.latches = latches  # what the last EXEC step produced

    def build(self, L: int) -> int:
        """Choose the next token from the current one and the latches (4 layers from ``L``).

        E1: which records the step has (present) and which one the current token is in
        (cur); E2: which are still to come (g) and where in a record the token is (mid);
        E3: the first to come (sel), or the end of the step or of a block start; E4: the
        output code of the chosen token.
        """
        items, n_exec = self.record_items()
        present, cur, short, start = self.emit_candidates(L, items)
        g, mid, live = self.emit_pending(L + 1, items, n_exec, present, cur, short, start)
        sel, nxt, first, go = self.emit_choice(L + 2, len(items), n_exec, g, live)
        E4 = L + 3
        self.emit_record_headers(E4, items, sel)
        self.emit_chunks(E4, mid)
        self.emit_next_token(E4, nxt)
        self.emit_block_start(E4, first, go)
        return E4 + 1

    def record_items(self) -> tuple[list, int]:
        """(the records an EXEC step may emit, in order, then a block start's; how many are the step's).

        A slot's results: one ``VALU`` when two lanes or more ran and hold the same
        value, else a ``VAL`` per active lane."""
        m = self.cw.m
        N, S, W = m.lanes, m.slots_per_block, m.max_warps
        items = [it for s in range(S) for it in [("VALU", s, None)] + [("VAL", s, lane) for lane in range(N)]]
        items += [("PVAL", None, lane) for lane in range(N)]
        items += [("MEM", s, lane) for s in range(S) for lane in range(N)]
        items += [("ENT", k, None) for k in range(ENT_ITEMS)]
        items += [("WST", w, None) for w in range(W)]
        n_exec = len(items)
        items += [("WSTI", w, None) for w in range(W)]  # a thread block starts: every existing warp's status
        return items, n_exec

    def emit_candidates(self, E1: int, items: list) -> tuple:
        """Per item: it is present in this step (from the latches) and the current token is in it.

        Returns (present, cur, the current C0 ends a short record, (EXEC now, CTA now)).
        """
        t, N = self.cw.t, self.cw.m.lanes
        EN = ent_layout(self.cw.m)
        ST = wst_layout(self.cw.m)
        emit_bits = [self.decodes[s].fields["emit"][0] for s in range(self.cw.m.slots_per_block)]
        ph, c2 = self.ctx.phase_cta, t.kind["C2"]
        n = len(items)
        present = self.cw.alloc("emit.present", n)
        cur = self.cw.alloc("emit.cur", n)
        short = self.cw.alloc("emit.short", 1, value_range=BIT)[0]  # the current C0 ends a short record
        for j, (kind, a, b) in enumerate(items):
            nph = [(ph, -1)]
            if kind == "VALU":  # one record for the slot's value, the same in every lane
                self.cw.gate(E1, f"em.pr{j}", [(emit_bits[a], 1), (self.latches.uniform[a], 1)] + nph, 2, [(present[j], 1)])
                self.cw.gate(E1, f"em.cur{j}", [(c2, 1), (self.fetch.hdr_valu_slot[a], 1)], 2, [(cur[j], 1)])
                self.short_record_end(E1, j, self.fetch.hdr_valu_slot[a], self.later_records(items, j), cur[j], short)
            elif kind == "VAL":
                terms = [(emit_bits[a], 1), (self.ctx.mask[b], 1), (self.latches.uniform[a], -1)]
                self.cw.gate(E1, f"em.pr{j}", terms + nph, 2, [(present[j], 1)])
                self.cw.gate(E1, f"em.cur{j}", [(c2, 1), (self.ctx.hdr_val[a * N + b], 1)], 2, [(cur[j], 1)])
                self.short_record_end(E1, j, self.ctx.hdr_val[a * N + b], self.later_records(items, j), cur[j], short)
            elif kind == "PVAL":
                self.cw.gate(E1, f"em.pr{j}", [(self.fetch.term["pemit"][0], 1), (self.ctx.mask[b], 1)] + nph, 2,
                             [(present[j], 1)])
                self.cw.gate(E1, f"em.cur{j}", [(t.kind["PVAL"], 1), (t.pval_lane[b], 1)], 2, [(cur[j], 1)])
            elif kind == "MEM":
                meta = self.latches.mem_meta[(a, b)]
                self.cw.gate(E1, f"em.pr{j}", [(meta[mem_word_bits(self.cw.m)], 1)] + nph, 1, [(present[j], 1)])
                self.cw.gate(E1, f"em.cur{j}", [(c2, 1), (self.ctx.hdr_mem[a * N + b], 1)], 2, [(cur[j], 1)])
                self.short_record_end(E1, j, self.ctx.hdr_mem[a * N + b], self.later_records(items, j), cur[j], short)
            elif kind == "ENT":
                self.cw.gate(E1, f"em.pr{j}", [(self.latches.ent[a][EN.bits + LEVEL_BITS], 1)] + nph, 1, [(present[j], 1)])
                self.cw.gate(E1, f"em.cur{j}", [(c2, 1), (self.ctx.hdr_ent[a], 1)], 2, [(cur[j], 1)])
            elif kind == "WST":
                self.cw.gate(E1, f"em.pr{j}", [(self.latches.wst[a][ST.bits], 1)] + nph, 1, [(present[j], 1)])
                self.cw.gate(E1, f"em.cur{j}", [(c2, 1), (self.ctx.hdr_wst[a], 1), (ph, -1)], 2, [(cur[j], 1)])
            else:  # WSTI: a thread block starts: every existing warp's initial status
                self.cw.gate(E1, f"em.pr{j}", [(self.exist[a][0], 1), (ph, 1)], 2, [(present[j], 1)])
                self.cw.gate(E1, f"em.cur{j}", [(c2, 1), (self.ctx.hdr_wst[a], 1), (ph, 1)], 3, [(cur[j], 1)])
        start_x = self.cw.alloc("emit.start_exec", 1)[0]
        start_c = self.cw.alloc("emit.start_cta", 1)[0]
        self.cw.gate(E1, "em.start_x", [(t.kind["EXEC"], 1)], 1, [(start_x, 1)])
        self.cw.gate(E1, "em.start_c", [(t.kind["CTA"], 1)], 1, [(start_c, 1)])
        return present, cur, short, (start_x, start_c)

    def later_records(self, items: list, j: int) -> list:
        """Terms, each 0 or 1, at least one of them 1 when a record of the step comes after item ``j``.

        Item j is a ``VAL(s, lane)`` (its slot emits, so a later active lane of the slot
        or a later slot that emits has records) or a ``MEM`` item; after them come the
        ``PVAL`` tokens, the other ``MEM`` items, the ``ENT`` and ``WST`` records.
        """
        m, N = self.cw.m, self.cw.m.lanes
        EN, ST = ent_layout(m), wst_layout(m)
        kind, s, lane = items[j]
        later = []
        if kind in ("VAL", "VALU"):
            later += [(self.ctx.mask[k], 1) for k in range(lane + 1, N)] if kind == "VAL" else []
            later += [(self.decodes[k].fields["emit"][0], 1) for k in range(s + 1, m.slots_per_block)]
            later += [(self.fetch.term["pemit"][0], 1)]
        later += [(self.latches.mem_meta[(a, b)][mem_word_bits(m)], 1) for k, (kd, a, b) in enumerate(items)
                  if kd == "MEM" and k > j]
        later += [(self.latches.ent[k][EN.bits + LEVEL_BITS], 1) for k in range(ENT_ITEMS)]
        later += [(self.latches.wst[w][ST.bits], 1) for w in range(m.max_warps)]
        return later

    def short_record_end(self, E1: int, j: int, header: int, later: list, cur_j: int, short: int) -> None:
        """A ``VAL`` or ``MEM`` record (item ``j``, its header's context dim ``header``) ends
        at its ``C0`` when the value fits that chunk and a later record of the step follows.

        The register and memory heads write a row where the header is three tokens back,
        from ``C0`` two back, ``C1`` one back and ``C2`` the current token: after
        ``HDR C0 X Y`` with X no ``C1`` (and so Y no ``C2``), the write at Y takes C0's 11
        bits and zeros, the value itself. A later record of the step makes X a header, so
        Y comes no later than the next ``EXEC``, whose pass writes before it reads: every
        read sees the value. One gate: ``C0``, the header, no bus bit above the chunk
        (``F = 0``) and at least one later record (``T >= 1``, ``later_records``), as
        ``B C0 + B hdr - B F + T >= 2 B + 1`` with ``B`` above any ``T``.
        """
        big = len(later) + 1
        high = [(self.latches.value[i], -big) for i in range(CHUNK_BITS[0], 32)]
        self.cw.gate(E1, f"em.short{j}", [(self.cw.t.kind["C0"], big), (header, big)] + high + later,
                     2 * big + 1, [(cur_j, 1), (short, 1)])

    def emit_pending(self, E2: int, items: list, n_exec: int, present, cur, short: int, start) -> tuple:
        """Per item: still to come (present, and the current token is before it, or the step just
        started); where in a record the token is (mid); the step or block start goes on (live)."""
        t, n = self.cw.t, len(items)
        start_x, start_c = start
        g = self.cw.alloc("emit.g", n)
        for j in range(n):
            lo = 0 if j < n_exec else n_exec
            begin = start_x if j < n_exec else start_c
            terms = [(present[j], 1), (begin, 1)] + [(cur[k], 1) for k in range(lo, j)]
            self.cw.gate(E2, f"em.g{j}", terms, 2, [(g[j], 1)])
        mid = self.cw.alloc("emit.mid", 3)
        self.cw.gate(E2, "em.mid0", [(t.kind[k], 1) for k in ("VAL", "VALU", "MEM", "ENT", "WST")], 1, [(mid[0], 1)])
        self.cw.gate(E2, "em.mid1", [(t.kind["C0"], 1), (short, -1)], 1, [(mid[1], 1)])
        self.cw.gate(E2, "em.mid2", [(t.kind["C1"], 1)], 1, [(mid[2], 1)])
        live_x = self.cw.alloc("emit.live_exec", 1)[0]
        live_c = self.cw.alloc("emit.live_cta", 1)[0]
        self.cw.gate(E2, "em.live_x", [(start_x, 1)] + [(cur[j], 1) for j in range(n_exec)], 1, [(live_x, 1)])
        self.cw.gate(E2, "em.live_c", [(start_c, 1)] + [(cur[j], 1) for j in range(n_exec, n)], 1, [(live_c, 1)])
        return g, mid, (live_x, live_c)

    def emit_choice(self, E3: int, n: int, n_exec: int, g, live) -> tuple:
        """The first item to come (sel); else the step is done (next) or the block start is (first); GO.

        Returns (sel, next, first, go).
        """
        live_x, live_c = live
        sel = self.cw.alloc("emit.sel", n)
        for j in range(n):
            lo = 0 if j < n_exec else n_exec
            self.cw.gate(E3, f"em.sel{j}", [(g[j], 1)] + [(g[k], -1) for k in range(lo, j)], 1, [(sel[j], 1)])
        nxt = self.cw.alloc("emit.next", 1)[0]  # EXEC step finished: the latched next token
        first = self.cw.alloc("emit.first", 1)[0]  # thread block start finished: EXEC(0, 0, lanes of warp 0)
        self.cw.gate(E3, "em.next", [(live_x, 1)] + [(g[k], -1) for k in range(n_exec)], 1, [(nxt, 1)])
        self.cw.gate(E3, "em.first", [(live_c, 1)] + [(g[k], -1) for k in range(n_exec, n)], 1, [(first, 1)])
        go = self.cw.alloc("emit.go", 1)[0]
        self.cw.gate(E3, "em.go", [(self.cw.t.kind["GO"], 1)], 1, [(go, 1)])
        return sel, nxt, first, go

    # the output code (E4): a token's class code and its field bits, times OUT_GAIN

    def emit_class(self, L: int, name: str, kind: str, cond_terms, theta) -> None:
        """Where ``cond_terms`` reach ``theta``: the class code of ``kind`` (its field bits at 0)."""
        of = self.cw.t.out_fields
        outs = [(self.cw.t.out_class[kind], OUT_GAIN)]
        for space in of.get(kind, {}).values():
            outs += [(d, -OUT_GAIN) for d in space.dims]
        self.cw.gate(L, name, cond_terms, theta, outs)

    def emit_field(self, L: int, name: str, kind: str, field: str, bit: int, cond_terms, theta) -> None:
        """Where ``cond_terms`` reach ``theta``: bit ``bit`` of the token's field set (if it has it)."""
        of = self.cw.t.out_fields
        if bit < of[kind][field].width:
            self.cw.gate(L, name, cond_terms, theta, [(of[kind][field][bit], 2 * OUT_GAIN)])

    def const_field_bits(self, L: int, prefix: str, kind: str, field: str, value: int, cond: int) -> None:
        for i in range(self.cw.t.out_fields[kind][field].width):
            if value >> i & 1:
                self.emit_field(L, f"{prefix}.{field}{i}", kind, field, i, [(cond, 1)], 1)

    def emit_record_headers(self, E4: int, items: list, sel) -> None:
        """The header token of the selected record: its class and the fields that name its row."""
        m, N = self.cw.m, self.cw.m.lanes
        for j, (kind, a, b) in enumerate(items):
            o = f"em.o{j}"
            if kind == "VALU":
                self.emit_class(E4, o, "VALU", [(sel[j], 1)], 1)
                self.const_field_bits(E4, o, "VALU", "slot", a, sel[j])
            elif kind == "VAL":
                self.emit_class(E4, o, "VAL", [(sel[j], 1)], 1)
                self.const_field_bits(E4, o, "VAL", "slot", a, sel[j])
                self.const_field_bits(E4, o, "VAL", "lane", b, sel[j])
            elif kind == "PVAL":
                self.emit_class(E4, o, "PVAL", [(sel[j], 1)], 1)
                self.const_field_bits(E4, o, "PVAL", "lane", b, sel[j])
                for i in range(m.preds):
                    self.emit_field(E4, f"{o}.bits{i}", "PVAL", "bits", i,
                                    [(sel[j], 1), (self.latches.pfin[b * m.preds + i], 1)], 2)
            elif kind == "MEM":
                self.emit_class(E4, o, "MEM", [(sel[j], 1)], 1)
                self.const_field_bits(E4, o, "MEM", "item", a * N + b, sel[j])
                meta = self.latches.mem_meta[(a, b)]
                for i in range(mem_word_bits(m)):
                    self.emit_field(E4, f"{o}.addr{i}", "MEM", "addr", i, [(sel[j], 1), (meta[i], 1)], 2)
            elif kind == "ENT":
                self.emit_ent_header(E4, j, a, sel)
            else:  # WST / WSTI
                self.emit_class(E4, o, "WST", [(sel[j], 1)], 1)
                self.const_field_bits(E4, o, "WST", "warp", a, sel[j])

    def emit_ent_header(self, E4: int, j: int, k: int, sel) -> None:
        """``ENT(k, warp, level)``: the running warp, the level latched with entry ``k``."""
        EN, W, o = ent_layout(self.cw.m), self.cw.m.max_warps, f"em.o{j}"
        self.emit_class(E4, o, "ENT", [(sel[j], 1)], 1)
        self.const_field_bits(E4, o, "ENT", "item", k, sel[j])
        for i in range(self.cw.t.out_fields["ENT"]["warp"].width):
            for w in range(W):
                if w >> i & 1:
                    self.emit_field(E4, f"{o}.w{i}.{w}", "ENT", "warp", i, [(sel[j], 1), (self.ctx.warp[w], 1)], 2)
        for i in range(LEVEL_BITS):
            self.emit_field(E4, f"{o}.lv{i}", "ENT", "level", i, [(sel[j], 1), (self.latches.ent[k][EN.bits + i], 1)], 2)

    def emit_chunks(self, E4: int, mid) -> None:
        """Chunk tokens of the open record: each payload bit from the item the last header names."""
        for c in range(3):
            kind = f"C{c}"
            self.emit_class(E4, f"em.chunk{c}", kind, [(mid[c], 1)], 1)
            for i in range(CHUNK_BITS[c]):
                bit = CHUNK_SHIFT[c] + i
                for q, src in enumerate(self.value_sources(bit)):
                    th = 1 + sum(1 for _, w_ in src if w_ > 0)
                    self.emit_field(E4, f"em.ch{c}.b{i}.{q}", kind, "value", i, [(mid[c], 1)] + src, th)

    def value_sources(self, bit: int) -> list:
        """Condition-and-value terms, one list per source of payload bit ``bit``."""
        m, ph = self.cw.m, self.ctx.phase_cta
        ST, EN = wst_layout(m), ent_layout(m)
        out = [[(self.latches.value[bit], 1)]]  # VAL and MEM records: the bus holds the named one
        for k in range(ENT_ITEMS):
            if bit < EN.bits:
                out.append([(self.ctx.hdr_ent[k], 1), (self.latches.ent[k][bit], 1)])
        for w in range(m.max_warps):
            if bit < ST.bits:
                out.append([(self.ctx.hdr_wst[w], 1), (ph, -1), (self.latches.wst[w][bit], 1)])
                # a thread block's start: every warp ready at depth 0, its existing lanes
                if bit in (ST.ready[0], ST.depth[0]):
                    out.append([(self.ctx.hdr_wst[w], 1), (ph, 1), (self.cw.ONE, 1.0 / self.cw.K)])
                elif ST.mask.offset <= bit < ST.mask.offset + ST.mask.width:
                    out.append([(self.ctx.hdr_wst[w], 1), (ph, 1), (self.exist[w][bit - ST.mask.offset], 1)])
        return out

    def emit_next_token(self, E4: int, nxt: int) -> None:
        """After the last record of an EXEC step: the latched next token (``records.next_layout``)."""
        NX, nk, of = next_layout(self.cw.m), self.latches.next, self.cw.t.out_fields
        K_EXEC, K_CTA, K_STOP = NX.EXEC[0], NX.CTA[0], NX.STOP[0]
        self.emit_class(E4, "em.exec", "EXEC", [(nxt, 1), (nk[K_EXEC], 1)], 2)
        for i in range(NX.block.width):
            self.emit_field(E4, f"em.exec.b{i}", "EXEC", "block", i, [(nxt, 1), (nk[K_EXEC], 1), (nk[NX.block[i]], 1)], 3)
        for i in range(NX.warp.width):
            self.emit_field(E4, f"em.exec.w{i}", "EXEC", "warp", i, [(nxt, 1), (nk[K_EXEC], 1), (nk[NX.warp[i]], 1)], 3)
        for lane in range(NX.mask.width):
            self.emit_field(E4, f"em.exec.m{lane}", "EXEC", "mask", lane,
                            [(nxt, 1), (nk[K_EXEC], 1), (nk[NX.mask[lane]], 1)], 3)
        self.emit_class(E4, "em.cta", "CTA", [(nxt, 1), (nk[K_CTA], 1)], 2)
        for i in range(self.latches.next_cta.width):
            self.emit_field(E4, f"em.cta.c{i}", "CTA", "ctaid", i,
                            [(nxt, 1), (nk[K_CTA], 1), (self.latches.next_cta[i], 1)], 3)
        self.emit_class(E4, "em.stop", "STOP", [(nxt, 1), (nk[K_STOP], 1)], 2)
        for code in range(3):
            k = getattr(NX, f"FAULT{code}")[0]
            self.emit_class(E4, f"em.fault{code}", "FAULT", [(nxt, 1), (nk[k], 1)], 2)
            for i in range(of["FAULT"]["code"].width):
                if code >> i & 1:
                    self.emit_field(E4, f"em.fault{code}.c{i}", "FAULT", "code", i, [(nxt, 1), (nk[k], 1)], 2)

    def emit_block_start(self, E4: int, first: int, go: int) -> None:
        """A thread block's start finished: warp 0 runs block 0 on its lanes; GO: thread block 0 starts."""
        self.emit_class(E4, "em.first.out", "EXEC", [(first, 1)], 1)
        for lane in range(self.cw.m.lanes):
            self.emit_field(E4, f"em.first.m{lane}", "EXEC", "mask", lane,
                            [(first, 1), (self.exist[0][lane], 1)], 2)
        self.emit_class(E4, "em.go.out", "CTA", [(go, 1)], 1)
