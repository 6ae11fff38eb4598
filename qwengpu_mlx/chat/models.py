"""The chat's ``--model``: opening a chat model, and the demo as launches see it.

What ``--model`` names (``demo``, a directory ``build --base`` wrote, a Qwen3.5 base
directory or Hugging Face repo id) is resolved and opened in ``splice.open``; this module
adds what only the chat knows:

* what ``demo`` is: the toy chat model shipped in the package (``chat.demo``), widened to
  the splice's width and combined with the circuit in memory; :func:`open_launch_model`
  is ``splice.open``'s with that demo and the start-up timer (``chat.startup.timed``);
* :func:`open_chat_model`: the combined model with its tokenizer, its note and its cache
  identity, for the chat loop (the base's weights too, where a launch needs only its config).

An unusable ``--model`` is a :class:`ChatModelError` (``splice.open.ModelOpenError``) whose
message says why and what to do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from mlx_lm.tokenizer_utils import load as load_tokenizer

from qwengpu_mlx.core.machine import MachineConfig
from qwengpu_mlx.splice.build import load_base
from qwengpu_mlx.splice.combined_runner import open_combined

from qwengpu_mlx.chat.demo import DEMO_DIR, demo_splice_config, demo_tools, load_demo
from qwengpu_mlx.chat.prefix import base_identity
from qwengpu_mlx.chat.startup import timed
from qwengpu_mlx.chat.tools import TOOLS, tools_for
from qwengpu_mlx.splice.open import (BASE_KIND, COMBINED_KIND, DEMO, DEMO_KIND, LaunchModel, ModelOpenError,
                                     combine_base, fetch_base, model_kind, open_errors)
from qwengpu_mlx.splice.open import open_launch_model as _open_launch_model

__all__ = ["BASE_KIND", "COMBINED_KIND", "DEMO", "DEMO_KIND", "GET_A_MODEL", "ChatModel", "ChatModelError",
           "LaunchModel", "model_kind", "open_chat_model", "open_launch_model"]

GET_A_MODEL = ("Chat needs a Qwen3.5 chat model: `qwengpu-mlx chat --model Qwen/Qwen3.5-2B` (downloaded once; "
               "about 4 GB) or a directory `qwengpu-mlx build --base` wrote. `--model demo` runs a toy model "
               "shipped with the package (trained only on templated arithmetic questions, not Qwen) to "
               "show the whole loop.")

ChatModelError = ModelOpenError  # ``--model`` cannot be opened (as a chat model, or for a launch)


@dataclass
class ChatModel:
    """A combined model as the chat loop uses it."""

    name: str  # what --model said, for the header
    combined: object  # splice.combined_runner.CombinedModel
    tokenizer: object  # mlx-lm TokenizerWrapper with the base's chat template
    machine: MachineConfig
    note: str = ""  # what the user should know about this model (the demo says what it is)
    identity: str = ""  # its files as a cache key (chat.prefix); "": nothing cached on disk
    log: Callable[[str], None] = lambda s: None  # where start-up and cache notes go
    tools: dict[str, list[dict]] = field(default_factory=lambda: dict(TOOLS))  # per mode: tools_for(machine) (the demo: its own)

    @property
    def has_tools(self) -> bool:
        return bool(self.tokenizer.has_tool_calling)


def _demo_config() -> dict:
    return demo_splice_config()  # the splice's base: hidden 1024, MLP 6144, 16 linear heads


def _steps(log: Callable[[str], None]):
    """``splice.open``'s ``step``: each slow step timed and named on ``log`` (``chat.startup``)."""
    return lambda what: timed(log, what)


def open_launch_model(spec: str, store, *, machine: MachineConfig | None = None, runner: bool = True,
                      log: Callable[[str], None] = lambda s: None) -> LaunchModel:
    """``splice.open.open_launch_model`` with the chat's demo as what ``demo`` names, and its
    slow steps named on ``log``."""
    return _open_launch_model(spec, store, machine=machine, runner=runner, demo_config=_demo_config,
                              step=_steps(log))


def open_chat_model(spec: str, store, *, machine: MachineConfig | None = None,
                    log: Callable[[str], None] = lambda s: None) -> ChatModel:
    """The chat model ``spec`` names (see the module docstring); ``machine`` None: the default
    machine when its circuit fits the base, else the published one, said on stderr
    (``splice.machine_choice``)."""
    try:
        kind = model_kind(spec)
        if kind == DEMO_KIND:
            return _open_demo(store, machine, log)
        if kind == COMBINED_KIND:
            return _open_checkpoint(Path(spec).expanduser(), store, log)
        return _open_base(spec, store, machine, log)
    except open_errors() as e:
        raise ChatModelError(str(e)) from None


def _open_demo(store, machine: MachineConfig | None, log) -> ChatModel:
    with timed(log, "the demo chat model"):
        # Our runner runs the toy itself: the widening is exact (the same logits, bit for bit:
        # tests/splice/test_widen.py), and the toy's prefill is ~100x cheaper on a CPU.
        model, tokenizer = load_demo()
    combined = combine_base(model, _demo_config(), store, machine=machine, step=_steps(log))
    machine = combined.circuit.machine
    return ChatModel(DEMO, combined, tokenizer, machine,
                     note="demo: a toy Qwen3.5-architecture model trained on templated arithmetic "
                          "questions (not Qwen); its launches run on the real circuit",
                     identity=base_identity(DEMO_DIR), log=log, tools=demo_tools(machine=machine))


def _open_checkpoint(path: Path, store, log) -> ChatModel:
    with timed(log, f"the combined checkpoint {path}"):
        combined = open_combined(path, store)
        tokenizer = load_tokenizer(path)
    machine = combined.circuit.machine
    return ChatModel(str(path), combined, tokenizer, machine, identity=base_identity(path), log=log,
                     tools=tools_for(machine))


def _open_base(spec: str, store, machine: MachineConfig | None, log) -> ChatModel:
    src = fetch_base(spec, step=_steps(log))
    with timed(log, f"loading {spec} with mlx_lm.load"):
        model, tokenizer = load_base(src.path)
    combined = combine_base(model, src.config, store, machine=machine, step=_steps(log))
    machine = combined.circuit.machine
    return ChatModel(spec, combined, tokenizer, machine, identity=base_identity(src.path), log=log,
                     tools=tools_for(machine))
