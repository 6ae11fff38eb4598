"""``qwengpu-mlx compile``: a kernel's PTX, its machine blocks or its launch prompt, or the
circuit's layout: what the host and the compiler make of it, without a launch."""

from __future__ import annotations

import json
from dataclasses import replace

from qwengpu_mlx.cli import args as cli_args
from qwengpu_mlx.cli import progress
from qwengpu_mlx.cli.common import launch_model, named_machine, stated_request
from qwengpu_mlx.compiler.layout_report import layout_report
from qwengpu_mlx.core.errors import LaunchError
from qwengpu_mlx.host.launch import placeholder_args
from qwengpu_mlx.runtime import CircuitStore, LaunchRequest, bind_request, compile_request, prompt_tokens


def run(ns) -> int:
    if ns.emit == "layout":
        with progress.phase(ns, "compiling the circuit"):
            compiled = CircuitStore().compiled(named_machine(ns))
        print(layout_report(compiled))
        return 0
    if ns.source is None:
        raise LaunchError("compile needs a KERNEL file (only --emit layout works without one)")
    la = cli_args.resolve(ns)
    req = stated_request(ns, la, named_machine(ns, la))
    ck = compile_request(req)
    if ns.emit == "tokens":
        return _emit_tokens(ns, la, ck, req)
    if ns.emit == "ptx":
        print(ck.ptx)
        return 0
    note = f"; arguments from {la.spec}" if la.spec is not None else ""
    if not la.args:
        req = replace(req, args=placeholder_args(ck))
        note = "; placeholder arguments (pass --arg to bind a real launch)"
    else:
        cli_args.check_complete(ck, la)
    _print_blocks(bind_request(req), note)
    return 0


def _emit_tokens(ns, la, ck, req: LaunchRequest) -> int:
    """The launch prompt's ids (in ``--model``'s vocabulary when given), as JSON."""
    layout = None
    if ns.model:
        held = launch_model(ns)
        req, layout = replace(req, machine=held.machine), held.layout
    cli_args.check_complete(ck, la)
    ids = prompt_tokens(bind_request(req), req.machine)
    print(json.dumps([layout.launch_id(t) for t in ids] if layout else ids))
    return 0


def _print_blocks(prog, note: str) -> None:
    print(f"// kernel {prog.kernel}: {len(prog.blocks)} blocks, {prog.regs_used} registers, "
          f"{prog.preds_used} predicates{note}")
    for a in prog.arrays:
        print(f"// {a.name}: words {a.base}..{a.base + a.length - 1}")
    for s in prog.shared:
        print(f"// __shared__ {s.name}: words {s.base}..{s.base + s.length - 1}")
    for name, v in prog.scalars.items():
        print(f"// {name} = {v}")
    print(prog.listing())
