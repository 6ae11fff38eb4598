"""Running the tool calls Qwen writes: each one launch (or a few) in the combined model.

A call comes in as mlx-lm's tool parser returns it (``{"name", "arguments"}``); what goes
back is a :class:`ToolOutcome`: the tool message's content (``tools.result_text`` or
``tools.error_text``) and a :class:`LaunchRecord` per launch. Nothing a model writes
may crash the chat: every refusal (parse, compile, lowering, launch) is an error
response that says why. The value in a response is read from the recurrent state of
the launch that computed it; with ``check`` every launch is replayed against the
reference interpreter, and a launch that disagrees is reported as an error, not a value.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from qwengpu_mlx.core.errors import QwenGpuError
from qwengpu_mlx.core.machine import MachineConfig
from qwengpu_mlx.runtime import LaunchRequest, bind_request, compile_request, launch

from qwengpu_mlx.chat.expression import evaluate, job_request
from qwengpu_mlx.chat.tools import GPU_EVAL_NAME, GPU_KERNEL_NAME, TOOLS, error_text, result_text

KERNEL_FILE = "kernel.cu"  # the name clang's messages give a kernel the model wrote


@dataclass
class LaunchRecord:
    """One launch a tool call made, for the turn's summary."""

    kernel: str  # the kernel's name (normal mode: its form, e.g. "dot")
    tokens: int  # launch tokens the model wrote
    tokens_per_s: float
    exact: bool | None  # --check's verdict; None when not checked
    logit_margin: float
    launch: object = None  # the runtime's Launch


@dataclass
class ToolOutcome:
    content: str  # the tool message's content: the GPU's value, or "error: why"
    error: bool
    launches: list[LaunchRecord] = field(default_factory=list)
    expression: str = ""  # what the call asked (call_expression), as the user is shown it

    @property
    def exact(self) -> bool | None:
        """Every launch checked exact (None: no launch, or one not checked)."""
        verdicts = [r.exact for r in self.launches]
        if not verdicts or None in verdicts:
            return None
        return all(verdicts)

    @property
    def tokens(self) -> int:
        """Launch tokens the model wrote for this call, all its launches together."""
        return sum(r.tokens for r in self.launches)

    def to_json(self) -> dict:
        """The call as ``--json`` audits it: what was asked, what the GPU answered."""
        return {"expression": self.expression, "result": self.content, "error": self.error,
                "exact": self.exact, "tokens": self.tokens, "launches": len(self.launches)}


def call_expression(call: dict) -> str:
    """What a parsed call asks, as a person reads it: ``gpu_eval``'s expression, ``gpu_kernel``'s
    source, the arguments otherwise; for a call that did not parse, its raw text."""
    if "error" in call:
        return str(call.get("raw", "")).strip()
    args = call.get("arguments")
    if isinstance(args, dict):
        for key in ("expression", "source"):
            if isinstance(args.get(key), str):
                return args[key]
        return json.dumps(args)
    return "" if args is None else str(args)


class LaunchNotExact(QwenGpuError):
    """--check found the model's launch different from the reference interpreter."""


@dataclass
class GpuTools:
    """Executes gpu_eval / gpu_kernel calls on one circuit runner (the combined model's)."""

    runner: object  # runtime Runner over the combined model's circuit
    machine: MachineConfig
    check: bool = False

    def run(self, call: dict, mode: str, events=None) -> ToolOutcome:
        """The outcome of one parsed call; never raises for what the model wrote.

        ``events``: a runtime ``LaunchEvents`` sink that hears every launch (the dashboard's panes)."""
        launches: list[LaunchRecord] = []
        name = call.get("name") if isinstance(call, dict) else None
        offered = [t["function"]["name"] for t in TOOLS[mode]]
        if name not in offered:
            return ToolOutcome(error_text(f"unknown tool {name!r}; this chat offers {', '.join(offered)}"), True)
        args = call.get("arguments")
        if not isinstance(args, dict):
            return ToolOutcome(error_text("the tool call's arguments must be an object"), True)
        try:
            value = (self._eval(args, launches, events) if name == GPU_EVAL_NAME
                     else self._kernel(args, launches, events))
        except (QwenGpuError, ValueError) as e:  # ExpressionError is a ValueError
            return ToolOutcome(error_text(str(e)), True, launches)
        return ToolOutcome(result_text(value), False, launches)

    def _launch(self, program, label: str, launches: list[LaunchRecord], events):
        """One bound program through the runtime's launch path, on this runner."""
        result = launch(LaunchRequest(program=program, machine=self.machine, check=self.check),
                        runner=self.runner, events=events)
        exact = result.check.exact if result.check is not None else None
        launches.append(LaunchRecord(label, len(result.tokens), result.tokens_per_s, exact, result.logit_margin,
                                     result))
        if exact is False:
            raise LaunchNotExact(f"the {label} launch disagreed with the reference interpreter: "
                                 + "; ".join(result.check.problems[:3]))
        return result

    def _eval(self, args: dict, launches: list[LaunchRecord], events):
        text = args.get("expression")
        if not isinstance(text, str):
            raise ValueError("gpu_eval needs an 'expression' string")

        def run_job(job):
            return self._launch(bind_request(job_request(job, self.machine)), job.form, launches, events).outputs

        return evaluate(text, run_job, machine=self.machine).value

    def _kernel(self, args: dict, launches: list[LaunchRecord], events) -> dict:
        source, kargs = args.get("source"), args.get("args", {})
        if not isinstance(source, str) or not source.strip():
            raise ValueError("gpu_kernel needs the CUDA 'source' as a string")
        if not isinstance(kargs, dict):
            raise ValueError("gpu_kernel's 'args' must be an object: parameter name -> integer or list")
        block, grid = _geometry(args.get("block", 4), "block"), _geometry(args.get("grid", 1), "grid")
        with tempfile.TemporaryDirectory(prefix="qwengpu-chat-") as tmp:
            path = Path(tmp) / KERNEL_FILE
            path.write_text(source)
            req = LaunchRequest(source=path, args=_kernel_args(kargs), block=block, grid=grid, machine=self.machine)
            name, program = compile_request(req).kernel.name, bind_request(req)
        return self._launch(program, name, launches, events).outputs


def _geometry(value, what: str) -> int:
    """block / grid as an integer (a model may write "4")."""
    try:
        n = int(str(value).strip())
    except ValueError:
        raise ValueError(f"{what} must be an integer, got {value!r}") from None
    return n


def _kernel_args(args: dict) -> dict:
    """Launch arguments as the host binds them: integers and lists of integers only."""
    out = {}
    for name, v in args.items():
        if isinstance(v, bool) or not (isinstance(v, int) or (isinstance(v, list)
                                                              and all(isinstance(x, int) and not isinstance(x, bool)
                                                                      for x in v))):
            raise ValueError(f"argument {name!r}: expected an integer or a list of integers, got {v!r}")
        out[str(name)] = v
    return out
