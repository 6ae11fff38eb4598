"""Token embeddings: what each launch token carries into the residual, and out of it.

Every circuit token has ``ONE = K``, a class bit for its kind, and its fields as bits
or one-hots in input dims the circuit reads. Because embeddings are tied, the same
row also carries the token's output code: a bipolar class code and bipolar field
bits in dims only the last layers write and only the final norm passes through.
The circuit selects a token by writing ``G`` times that code (``OUT_GAIN``).
"""

from __future__ import annotations

import numpy as np

from qwengpu_mlx.core.machine import MachineConfig
from qwengpu_mlx.core.vocab import CHUNK_BITS, ENT_ITEMS, MAX_GRID, STACK_LEVELS, Vocab

from qwengpu_mlx.compiler.residual import ResidualLayout

KINDS = ["PROG", "MEM", "C0", "C1", "C2", "DIMS", "GRID", "GO", "CTA", "EXEC", "VAL", "PVAL", "ENT", "WST",
         "STOP", "FAULT", "VALU"]
OUT_GAIN = 64.0


def _bits(n: int) -> int:
    return max(1, (n - 1).bit_length())


def ntid_bits(m: MachineConfig) -> int:
    """Binary digits of blockDim.x (1..max_block_dim): 5 up to 31 threads, 6 for 32."""
    return m.max_block_dim.bit_length()


def _set_bits(x: dict, space, value: int) -> None:
    """Write ``value`` in binary into ``space`` (bit i in its dim i) of the row ``x``."""
    for i in range(space.width):
        if value >> i & 1:
            x[space[i]] = 1.0


class TokenDims:
    """Residual dims of token fields (inputs) and of output codes (OUT).

    ``binary``: the EXEC block and the ENT (warp, level) row in binary, for a circuit that
    decodes them with a head's SiLU (the fewest residual dims, ``CircuitWiring.fewest_dims``);
    else one-hot, the plain queries and keys that leave the rows a kernel never names at
    exact zeros (what the native step skips).
    """

    def __init__(self, lay: ResidualLayout, m: MachineConfig, vocab: Vocab, binary: bool = False,
                 exec_binary: bool = False):
        self.m, self.vocab, self.binary = m, vocab, binary
        # the EXEC block in binary also where the rest is one-hot (``exec_binary``): only the
        # context head reads it, and a context head takes 32 bits of a one-hot (context.py)
        self.exec_binary = binary or exec_binary
        P = vocab.pieces
        self.kind = {k: lay.alloc(f"tok.{k}", 1)[0] for k in KINDS}
        # record headers carry their row in binary: the memory heads' SiLU decodes the key
        self.prog_block = lay.alloc("tok.prog.block", _bits(m.rom_blocks))
        self.prog_piece = lay.alloc("tok.prog.piece", _bits(P))
        self.mem_addr = lay.alloc("tok.mem.addr", _bits(m.mem_words))
        self.mem_item = lay.alloc("tok.mem.item", vocab.input_item + 1)
        self.chunk = [lay.alloc(f"tok.c{j}.bits", CHUNK_BITS[j]) for j in range(3)]
        self.dims_ntid = lay.alloc("tok.dims.ntid", ntid_bits(m))
        self.dims_mask0 = lay.alloc("tok.dims.mask0", m.lanes)
        self.exec_b = lay.alloc("tok.exec.block", _bits(m.rom_blocks) if self.exec_binary else m.rom_blocks)
        self.exec_w = lay.alloc("tok.exec.warp", m.max_warps)
        self.exec_m = lay.alloc("tok.exec.mask", m.lanes)
        self.val_slot = lay.alloc("tok.val.slot", m.slots_per_block)
        self.val_lane = lay.alloc("tok.val.lane", m.lanes)
        self.pval_lane = lay.alloc("tok.pval.lane", m.lanes)
        self.pval_bits = lay.alloc("tok.pval.bits", m.preds)
        self.fault_code = lay.alloc("tok.fault.code", 2)
        self.grid_n = lay.alloc("tok.grid.nctaid", _bits(MAX_GRID + 1))  # nctaid in binary
        self.cta_c = lay.alloc("tok.cta.ctaid", _bits(MAX_GRID))  # ctaid in binary
        self.ent_item = lay.alloc("tok.ent.item", ENT_ITEMS)
        self.ent_wl = lay.alloc("tok.ent.warp_level", _bits(m.max_warps) + _bits(STACK_LEVELS) if binary
                                else m.max_warps * STACK_LEVELS)  # binary: level bits, then warp bits
        self.wst_w = lay.alloc("tok.wst.warp", m.max_warps)
        # output code
        self.out_class = {k: lay.alloc(f"out.class.{k}", 1)[0] for k in KINDS}
        self.out_fields: dict[str, dict[str, object]] = {}
        spec = {
            "PROG": [("block", _bits(m.rom_blocks)), ("piece", _bits(P))],
            "MEM": [("item", _bits(vocab.input_item + 1)), ("addr", _bits(m.mem_words))],
            "C0": [("value", CHUNK_BITS[0])], "C1": [("value", CHUNK_BITS[1])], "C2": [("value", CHUNK_BITS[2])],
            "DIMS": [("ntid", ntid_bits(m))],
            "GRID": [("nctaid", _bits(MAX_GRID + 1))],
            "CTA": [("ctaid", _bits(MAX_GRID))],
            "ENT": [("item", _bits(ENT_ITEMS)), ("warp", _bits(m.max_warps)), ("level", _bits(STACK_LEVELS))],
            "WST": [("warp", _bits(m.max_warps))],
            "EXEC": [("block", _bits(m.rom_blocks)), ("warp", _bits(m.max_warps)), ("mask", m.lanes)],
            "VAL": [("slot", _bits(m.slots_per_block)), ("lane", _bits(m.lanes))],
            "VALU": [("slot", _bits(m.slots_per_block))],
            "PVAL": [("lane", _bits(m.lanes)), ("bits", m.preds)],
            "FAULT": [("code", 2)],
        }
        for kind, fields in spec.items():
            self.out_fields[kind] = {name: lay.alloc(f"out.{kind}.{name}", w) for name, w in fields}
        self.out_dims = sorted(list(self.out_class.values())
                               + [d for f in self.out_fields.values() for s in f.values() for d in s.dims])

    def embedding(self, K: float) -> np.ndarray:
        m, v = self.m, self.vocab
        rows = []
        for tok in v.tokens:
            f = dict(tok.fields)
            x = {}
            x[self.kind[tok.kind]] = 1.0
            if tok.kind == "PROG":
                _set_bits(x, self.prog_block, f["block"])
                _set_bits(x, self.prog_piece, f["piece"])
            elif tok.kind == "MEM":
                _set_bits(x, self.mem_addr, f["addr"])
                x[self.mem_item[f["item"]]] = 1.0
            elif tok.kind in ("C0", "C1", "C2"):
                _set_bits(x, self.chunk[int(tok.kind[1])], f["value"])
            elif tok.kind == "DIMS":
                n = f["ntid"]
                _set_bits(x, self.dims_ntid, n)
                for lane in range(m.lanes):
                    if lane < n:
                        x[self.dims_mask0[lane]] = 1.0
            elif tok.kind == "EXEC":
                if self.exec_binary:
                    _set_bits(x, self.exec_b, f["block"])
                else:
                    x[self.exec_b[f["block"]]] = 1.0
                x[self.exec_w[f["warp"]]] = 1.0
                _set_bits(x, self.exec_m, f["mask"])
            elif tok.kind == "VAL":
                x[self.val_slot[f["slot"]]] = 1.0
                x[self.val_lane[f["lane"]]] = 1.0
            elif tok.kind == "VALU":  # the slot one-hot as VAL's; no lane: every lane
                x[self.val_slot[f["slot"]]] = 1.0
            elif tok.kind == "PVAL":
                x[self.pval_lane[f["lane"]]] = 1.0
                _set_bits(x, self.pval_bits, f["bits"])
            elif tok.kind in ("GRID", "CTA"):
                _set_bits(x, *((self.grid_n, f["nctaid"]) if tok.kind == "GRID" else (self.cta_c, f["ctaid"])))
            elif tok.kind == "ENT":
                x[self.ent_item[f["item"]]] = 1.0
                if self.binary:
                    _set_bits(x, self.ent_wl, f["warp"] << _bits(STACK_LEVELS) | f["level"])
                else:
                    x[self.ent_wl[f["warp"] * STACK_LEVELS + f["level"]]] = 1.0
            elif tok.kind == "WST":
                x[self.wst_w[f["warp"]]] = 1.0
            elif tok.kind == "FAULT":
                _set_bits(x, self.fault_code, f["code"])
            # output code (bipolar)
            for k, d in self.out_class.items():
                x[d] = 1.0 if k == tok.kind else -1.0
            for name, space in self.out_fields.get(tok.kind, {}).items():
                val = f[name]
                for i in range(space.width):
                    x[space[i]] = 1.0 if val >> i & 1 else -1.0
            rows.append(x)
        return rows

    def sparse_matrix(self, one: int, K: float) -> tuple[np.ndarray, np.ndarray]:
        """(dims, E [V, len(dims)]): the embedding restricted to the dims tokens use."""
        rows = self.embedding(K)
        dims = sorted({one} | {d for x in rows for d in x})
        col = {d: i for i, d in enumerate(dims)}
        E = np.zeros((len(rows), len(dims)), np.float32)
        E[:, col[one]] = K
        for i, x in enumerate(rows):
            for d, val in x.items():
                E[i, col[d]] = val
        return np.array(dims, dtype=np.int64), E
