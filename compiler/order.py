"""The plan's dataflow order: every gate and head reads dims that something below it writes.

A layer's mixer reads the residual below it and its MLP the residual below the MLP, so a
gate that reads a dim only a gate of its own MLP (or a later block) writes sees zeros
there: the circuit compiles, runs and computes something else, with no error anywhere.
:func:`check_order` names such a read at compile time, with the block that writes the dim
(``compile_machine`` runs it after the schedule, which moves gates and heads).
"""

from __future__ import annotations

from qwengpu_mlx.compiler.assemble import CircuitPlan

EMBEDDING = -1  # the position of a token's embedding: below every block


def writers(plan: CircuitPlan) -> dict[int, int]:
    """Residual dim -> the position of its first writer: the embedding, else 2 L for layer
    L's mixer and 2 L + 1 for its MLP (a block reads what positions below its own wrote)."""
    first = {int(d): EMBEDDING for d in plan.embedding_dims()}
    first.setdefault(plan.layout.ONE, EMBEDDING)
    for L, lp in enumerate(plan.layers):
        if lp.mixer is not None:
            for d in lp.mixer.output_dims():
                first.setdefault(int(d), 2 * L)
        if lp.mlp is not None:
            for d in lp.mlp.used_outputs():
                first.setdefault(int(d), 2 * L + 1)
    return first


def check_order(plan: CircuitPlan) -> None:
    """Raises ValueError at the first gate or head that reads a dim whose first writer is
    its own block or one above it (a dim nothing writes is a zero, which any block may read)."""
    first, names = writers(plan), plan.layout.dim_names()

    def check(dim: int, position: int, reader: str) -> None:
        at = first.get(int(dim))  # None: no block writes it, a zero everywhere (a lane with no later lanes)
        if at is not None and at >= position:
            raise ValueError(f"{reader} reads {names.get(int(dim), dim)}, which {_block(at)} writes first: "
                             f"a block reads only what blocks below it wrote")

    for L, lp in enumerate(plan.layers):
        if lp.mixer is not None:
            for h in lp.mixer.heads:
                for d in [t[1] for t in h.key_terms + h.query_terms + h.value_terms]:
                    check(d, 2 * L, f"head {h.name} (layer {L})")
        if lp.mlp is not None:
            for g in lp.mlp.gates:
                for d, _ in g.terms:
                    check(d, 2 * L + 1, f"gate {g.name} (MLP {L})")


def _block(position: int) -> str:
    return f"layer {position // 2}'s {'MLP' if position % 2 else 'mixer'}"
