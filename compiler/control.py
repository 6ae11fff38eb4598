"""The control unit: SIMT stack, warp scheduling, barriers, thread blocks, emission.

State lives in DeltaNet rows written by records the model itself emits:

* warp status, one single-row head per warp (``WST(w)`` records): state one-hot
  (ready, waiting, done), stack depth one-hot, exited lanes, resume block and mask;
* SIMT stack entries, rows (warp, level) (``ENT(item, w, level)`` records): pc, rpc
  (+ valid), mask. The running entry's pc and mask are in the EXEC token itself.

Per EXEC pass (docs/CIRCUIT.md): the state heads (this module, :func:`control_state`)
read the statuses and the running warp's stack; the "early" half (``control_early``,
layers beside the first slot) precomputes every candidate (pop targets, the next ready
warp, push levels, reconvergence tests); the "late" half (``control_late``), after the
last slot knows the branch predicate, picks the event (continue, pop, diverge, barrier,
exit, warp done, thread block done) and makes the step's records, which the latch stage
holds. The emit stage then walks the latched records, one token per pass.

Semantics follow the reference interpreter (qwengpu_mlx/core/reference.py): IPDOM stack with
GPGPU-Sim's compaction (no reconvergence entry when it equals the running entry's;
no entry for a side that starts at the reconvergence point), lowest runnable warp
first, barrier release when every live warp waits, deadlock when a waiting warp's
mask is not all its live lanes.
"""


from __future__ import annotations

from dataclasses import dataclass

from qwengpu_mlx.core.encoding import term_fields
from qwengpu_mlx.core.records import ent_layout, next_layout, pc_bits, wst_layout
from qwengpu_mlx.core.vocab import CHUNK_BITS, CHUNK_SHIFT, STACK_LEVELS

from qwengpu_mlx.compiler.context import Context
from qwengpu_mlx.compiler.mlp import eq_terms
from qwengpu_mlx.compiler.wiring import CircuitWiring


D = STACK_LEVELS
LEVEL_BITS = max(1, (D - 1).bit_length())  # an ENT token's level field, in binary


def record_layouts(m) -> tuple:
    """(status row, stack entry, next token) bit layouts (``qwengpu_mlx.core.records``) and the bits of a pc.

    ValueError when the machine's ROM needs longer pcs than the terminator encodes."""
    P = pc_bits(m)
    if P > term_fields(m)["target"][1]:
        raise ValueError(f"{m.rom_blocks} ROM blocks need {P}-bit pcs; "
                         f"the terminator encodes {term_fields(m)['target'][1]}")
    return wst_layout(m), ent_layout(m), next_layout(m), P


@dataclass(frozen=True)
class ControlState:
    """What the state heads read: every warp's status row, the running warp's stack, the lanes that exist."""

    status: list  # per warp: its status row (``records.wst_layout``)
    entry: list  # per stack level: the running warp's entry (``records.ent_layout``)
    exist: list  # per warp: its lanes that exist (4 w + l < ntid)


def stack_key(cw: CircuitWiring, h, w: int, lev: int) -> None:
    """Key row (w, lev) of a stack head from the ENT header three tokens back: its one-hot
    (warp, level) dim, or its binary (level, warp) digits decoded by the head's SiLU."""
    t = cw.t
    if not t.binary:
        h.key(w * D + lev, t.ent_wl[w * D + lev], tap=0)
        return
    terms, th = eq_terms(t.ent_wl.dims, w << LEVEL_BITS | lev)
    cw.decoded_key(h, w * D + lev, terms + [(t.kind["ENT"], 1)], th + 1, tap=0)


def status_heads(cw: CircuitWiring, L: int, name: str) -> list:
    """Per warp, a single-row head at layer ``L`` that keeps the warp's last ``WST`` record;
    returns per warp the dims of its status row (``records.wst_layout``). Every copy reads
    the same records, so a later layer can read the statuses again instead of the
    residual carrying them from layer ``L``."""
    t, ST = cw.t, wst_layout(cw.m)
    status = []
    for w in range(cw.m.max_warps):
        h = cw.head(L, f"{name}.w{w}", 1, ST.bits)
        out = cw.alloc(f"{name}.w{w}", ST.bits)
        h.key(0, t.wst_w[w], tap=0)
        for i in range(ST.bits):
            j = next(j for j in range(3) if CHUNK_SHIFT[j] <= i < CHUNK_SHIFT[j] + CHUNK_BITS[j])
            h.value_bit(i, t.chunk[j][i - CHUNK_SHIFT[j]], tap=1 + j)
            h.read_bit(i, out[i])
        cw.one_row_reader(h)
        status.append(out)
    return status


def control_state(cw: CircuitWiring, ctx: Context, L: int) -> ControlState:
    """Warp status heads, the running warp's stack heads (layer ``L``), the existing lanes (MLP ``L``)."""
    t, W, N = cw.t, cw.m.max_warps, cw.m.lanes
    _, EN, _, _ = record_layouts(cw.m)
    status = status_heads(cw, L, "status")
    # stack entries of the running warp, one head per level
    entry = []
    for k in range(D):
        h = cw.head(L, f"stack.level{k}", W * D, EN.bits)
        out = cw.alloc(f"stack.level{k}", EN.bits)
        for w in range(W):
            for lev in range(D):
                stack_key(cw, h, w, lev)
            h.query(w * D + k, ctx.warp[w])
        for i in range(EN.bits):
            j = next(j for j in range(3) if CHUNK_SHIFT[j] <= i < CHUNK_SHIFT[j] + CHUNK_BITS[j])
            h.value_bit(i, t.chunk[j][i - CHUNK_SHIFT[j]], tap=1 + j)
            h.read_bit(i, out[i])
        entry.append(out)
    # lanes that exist in each warp: 4w + l < ntid
    exist = []
    for w in range(W):
        sp = cw.alloc(f"exist.w{w}", N)
        for lane in range(N):
            idx = w * N + lane
            ntid = [(ctx.ntid[i], 2 ** i) for i in range(ctx.ntid.width)]
            cw.gate(L, f"exist.w{w}l{lane}", ntid, idx + 1, [(sp[lane], 1)])
        exist.append(sp)
    return ControlState(status, entry, exist)
