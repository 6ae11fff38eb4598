"""What every stage of the machine's circuit writes into, and how it places a part there.

:class:`CircuitWiring` holds the plan being built (its layers and residual layout), the
machine, its vocabulary and the token dims (``tokens.TokenDims``); its methods put a gate
in a layer's MLP, a head in a layer's mixer, a named subspace in the residual, and find
a linear layer with room. The stages (``context``, ``fetch``, ``slot``, ``control``,
``latch``, ``emit``) each receive it and the products of the stages before them, and
return their own: none of them keeps another stage's fields.

The order of ``alloc`` and ``gate`` calls is the order of dims and units in the weights:
a stage that moves is a stage whose weights change.
"""

from __future__ import annotations

from qwengpu_mlx.core.machine import MachineConfig
from qwengpu_mlx.core.vocab import vocab_for

from qwengpu_mlx.compiler.assemble import CircuitPlan, Shape
from qwengpu_mlx.compiler.levels import Levels
from qwengpu_mlx.compiler.placement import placing
from qwengpu_mlx.compiler.residual import ResidualLayout, Subspace
from qwengpu_mlx.compiler.sizing import QWEN35_2B
from qwengpu_mlx.compiler.tokens import TokenDims

LINEAR_HEADS = QWEN35_2B.linear_heads  # heads are spread towards Qwen3.5-2B's heads per layer


class CircuitWiring:
    """The plan under construction, the machine it is for, and the helpers that place its parts."""

    def __init__(self, machine: MachineConfig, shape: Shape, levels: Levels, fewest_dims: bool = False):
        self.m = machine
        self.vocab = vocab_for(machine)
        self.plan = CircuitPlan(shape, ResidualLayout(shape.hidden), levels)
        self.lay = self.plan.layout
        self.K = levels.K
        # the form of the circuit (``machine_circuit.fewest_dims``): binary fields decoded by
        # the heads and keys against ONE2, or one-hots and exact-zero keys for the native step
        self.fewest_dims = fewest_dims
        # the EXEC block's one-hot would take more than one context head (32 bits each): its
        # digits take one, and MLP 0 decodes them to the one-hot the ROM heads query (context.py)
        exec_binary = machine.rom_blocks > shape.value_dim // 2
        self.t = TokenDims(self.lay, machine, self.vocab, binary=fewest_dims,
                           exec_binary=exec_binary)  # first in the residual
        self.ONE = self.lay.ONE

    def layer(self, i: int) -> int:
        while len(self.plan.layers) <= i:
            self.plan.new_layer()
        return i

    def linear_at_or_after(self, i: int) -> int:
        while not self.plan.shape.is_linear(i):
            i += 1
        return self.layer(i)

    def gate(self, layer: int, name: str, terms, theta, outputs):
        self.layer(layer)
        return self.plan.mlp(layer).gate(name, terms, theta, outputs)

    def alloc(self, name: str, width: int, **kw) -> Subspace:
        return self.lay.alloc(name, width, **kw)

    def head(self, layer: int, name: str, rows: int, bits: int):
        self.layer(layer)
        return self.plan.mixer(layer).head(name, rows, bits)

    def one(self) -> tuple[int, float]:
        """The term that is 1 at every token: ONE (which holds K) over K."""
        return (self.ONE, 1.0 / self.K)

    def decoded_query(self, h, row: int, terms, theta: float, ref: int | None = None) -> None:
        """Query channel ``row`` = SiLU(G (sum w x - (theta - 1/2) ref)), decoded by the head itself.

        The sum is an integer over bits, so the channel is G/2 where it reaches theta and
        SiLU of at most -G/2, exactly 0, below: a one-hot query (or none) from binary
        fields, with no MLP gate and no residual dim per row. The threshold is written
        against the class-2 constant; ``CircuitPlan.finalize`` gives the head class-2
        copies of its other inputs, so the decision does not move with the signal ratio.
        ``ref`` (default ``ONE2``) is another class-2 bit to write the threshold against: where
        it and the terms' bits are 0 the channel is exactly 0 (``memory_parts``).
        """
        G = self.plan.levels.decode_gain
        for d, w in terms:
            h.query(row, d, G * w)
        h.query(row, self.lay.ONE2 if ref is None else ref, -G * (theta - 0.5))

    def decoded_key(self, h, row: int, terms, theta: float, tap: int, ref: int | None = None) -> None:
        """Key channel ``row`` decoded by the head's SiLU, as ``decoded_query``, from the token at ``tap``."""
        G = self.plan.levels.decode_gain
        for d, w in terms:
            h.key(row, d, tap, G * w)
        h.key(row, self.lay.ONE2 if ref is None else ref, tap, -G * (theta - 0.5))

    def one_row_reader(self, h):
        h.query(0, self.ONE, 1.0 / self.K)

    def stage(self, name: str):
        """``with cw.stage("fetch"):`` notes what the enclosed code places as that stage's (``placement``)."""
        return placing(self.plan, name)

    def has_room(self, L: int, need: int, cap: int) -> bool:
        """Layer ``L`` (a linear one) takes ``need`` more heads under ``cap``."""
        self.layer(L)
        mixer = self.plan.layers[L].mixer
        return (len(mixer.heads) if mixer else 0) + need <= cap

    def linear_with_room(self, lo: int, need: int) -> int:
        """The first linear layer at or after ``lo`` with ``need`` free heads (under the 2B head count)."""
        L = self.linear_at_or_after(lo)
        while not self.has_room(L, need, min(self.plan.shape.linear_heads, LINEAR_HEADS)):
            L = self.linear_at_or_after(L + 1)
        return L

    def free_linear_layer(self, hi: int, need: int, lo: int = 2) -> int:
        """The latest linear layer in [lo, hi] with ``need`` free heads."""
        for L in range(hi, lo - 1, -1):
            if self.plan.shape.is_linear(L) and self.has_room(L, need, self.plan.shape.linear_heads):
                return L
        raise ValueError(f"no linear layer in {lo}..{hi} has {need} free heads")
