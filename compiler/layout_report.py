"""``compile --emit layout``: which layer does what, which heads hold which state, which
residual dims hold what, and which stage placed each layer's gates and heads."""

from __future__ import annotations

from qwengpu_mlx.compiler.placement import describe
from qwengpu_mlx.compiler.sizing import live_dims


def _plan(mc_or_compiled):
    """The plan to describe: a CompiledMachine's final plan (folded for a dense shape), a
    MachineCircuit's plan, or a CircuitPlan itself."""
    plan = getattr(mc_or_compiled, "plan", mc_or_compiled)
    if not hasattr(plan, "layers"):
        raise TypeError(f"no circuit plan in {type(mc_or_compiled).__name__}")
    return plan


def layout_report(mc_or_compiled) -> str:
    """The layout text: per layer its widths, live dims and heads; the residual subspaces;
    then per layer the stages that placed its parts (``compiler.placement``)."""
    plan = _plan(mc_or_compiled)
    live = live_dims(plan)
    lines = [f"# circuit: {len(plan.layers)} layers, hidden {plan.shape.hidden} "
             f"({plan.layout.used} dims used), linear heads {plan.shape.linear_heads} x "
             f"(Dk {plan.shape.key_dim}, Dv {plan.shape.value_dim}); vocabulary {len(plan.vocab)} tokens",
             "# live: residual dims holding a value some later layer reads (what dim reuse could reach)",
             "# layer  kind       heads  mixer-inputs  mlp-units  mlp-inputs  mlp-outputs   live  state heads"]
    for row in plan.usage():
        lp = plan.layers[row["layer"]]
        heads = ", ".join(f"{h.name}[{h.index}]" for h in lp.mixer.heads) if lp.mixer else ""
        mix_in = len(lp.mixer.input_dims()) if lp.mixer and lp.mixer.heads else 0
        mlp_out = len(lp.mlp.used_outputs()) if lp.mlp and lp.mlp.gates else 0
        lines.append(f"{row['layer']:6d}  {row['kind'][:9]:9s}  {len(row['heads']):5d}  {mix_in:12d}  "
                     f"{row['mlp_units']:9d}  {row['mlp_inputs']:10d}  {mlp_out:11d}  {live[row['layer']]:5d}  {heads}")
    lines.append("# residual subspaces (start..end  name)")
    lines.append(plan.layout.describe())
    lines += placement_lines(plan)
    return "\n".join(lines)


def placement_lines(plan) -> list[str]:
    """One line per layer: the stages that placed its gates (g) and heads (h); for the
    parts the schedule moved in, the stages that built them."""
    lines = ["# placed by stage (g: gates, h: heads; schedule: moved here by the schedule pass, from the stages named)",
             "# layer  stages"]
    for i, lp in enumerate(plan.layers):
        text = describe(lp.placed)
        if lp.moved_in:
            text += f" (from {describe(lp.moved_in)})"
        lines.append(f"{i:6d}  {text}")
    return lines
