"""What ``--model`` names, opened as a chat model: the combined model and its tokenizer.

* ``demo``: the toy chat model shipped in the package (``chat.demo``), widened to the
  splice's width and combined with the circuit in memory;
* a directory ``build --base`` wrote (it has ``qwengpu-splice.json``): opened as a
  combined checkpoint (``splice.runner.open_combined``);
* any other directory or a Hugging Face repo id: a Qwen3.5 base, fetched once
  (``splice.source``: config first, the fit check before any weight) and combined with
  the circuit on the fly: no dense export is needed to chat.

In every case the result is the same :class:`ChatModel`; an unusable ``--model`` is a
:class:`ChatModelError` whose message says why and what to do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from qwengpu_mlx.machine import DEFAULT_MACHINE, MachineConfig

DEMO = "demo"
GET_A_MODEL = ("Chat needs a Qwen3.5 chat model: `qwengpu-mlx chat --model Qwen/Qwen3.5-2B` (downloaded once; "
               "about 4 GB) or a directory `qwengpu-mlx build --base` wrote. `--model demo` runs a toy model "
               "shipped with the package (trained only on templated arithmetic questions, not Qwen) to "
               "show the whole loop.")


class ChatModelError(ValueError):
    """``--model`` cannot be opened as a chat model; the message says why."""


@dataclass
class ChatModel:
    """A combined model as the chat loop uses it."""

    name: str  # what --model said, for the header
    combined: object  # splice.runner.CombinedModel
    tokenizer: object  # mlx-lm TokenizerWrapper with the base's chat template
    machine: MachineConfig
    note: str = ""  # what the user should know about this model (the demo says what it is)

    @property
    def has_tools(self) -> bool:
        return bool(self.tokenizer.has_tool_calling)


def open_chat_model(spec: str, store, *, machine: MachineConfig = DEFAULT_MACHINE,
                    log: Callable[[str], None] = lambda s: None) -> ChatModel:
    """The chat model ``spec`` names (see the module docstring)."""
    from qwengpu_mlx.splice.errors import SPLICE_ERRORS
    from qwengpu_mlx.splice.runner import CombinedCheckpointError

    try:
        if spec == DEMO:
            return _open_demo(store, machine, log)
        path = Path(spec)
        from qwengpu_mlx.splice.build import SPLICE_RECORD

        if (path / SPLICE_RECORD).is_file():
            return _open_checkpoint(path, store, log)
        if not path.exists() and _looks_like_a_path(spec):
            raise ChatModelError("no such directory (--model takes a Qwen3.5 directory, a Hugging Face "
                                 "repo id such as Qwen/Qwen3.5-2B, or demo)")
        return _open_base(spec, store, machine, log)
    except (CombinedCheckpointError, *SPLICE_ERRORS) as e:
        raise ChatModelError(str(e)) from None


def _looks_like_a_path(spec: str) -> bool:
    """A repo id is ``owner/name``: anything else with a separator, or rooted, is a path."""
    return spec.startswith(("/", ".", "~")) or spec.count("/") > 1 or "\\" in spec


def _circuit(store, machine: MachineConfig, log):
    """The machine's circuit folded at Qwen3.5-2B's shape: (compiled, compact runner)."""
    from qwengpu_mlx.compiler.sizing import QWEN35_2B

    log(f"compiling the {machine_name(machine)} machine's circuit at Qwen3.5-2B's shape")
    compiled = store.compiled(machine, QWEN35_2B)
    return compiled, store.runner_over(compiled.compact(), machine)


def machine_name(machine: MachineConfig) -> str:
    from qwengpu_mlx.machine import MACHINES

    return next((k for k, v in MACHINES.items() if v == machine), "custom")


def combine_in_memory(base_model, base_config: dict, tokenizer, store, machine: MachineConfig, log,
                      calibration: str | None = None):
    """A base (mlx-lm model) combined with the circuit without writing the dense checkpoint:
    the fit check, the launch rows' shared part from the calibration text (default: the
    splice's shipped one), the circuit's runner."""
    from qwengpu_mlx.splice.build import check_fits
    from qwengpu_mlx.splice.layout import SpliceLayout, text_config
    from qwengpu_mlx.splice.logits import SuppressionError, suppression_row
    from qwengpu_mlx.splice.pipeline import calibration_text
    from qwengpu_mlx.splice.runner import CombinedModel

    compiled, runner = _circuit(store, machine, log)
    check_fits(base_config, compiled.plan.config())
    lay = SpliceLayout(text_config(base_config), compiled.plan.config(), len(compiled.plan.vocab))
    log("measuring the launch rows' suppression on the calibration text")
    text = calibration if calibration is not None else calibration_text()
    try:
        row = suppression_row(base_model, tokenizer.encode(text), lay.launch_tokens).row
    except SuppressionError as e:
        # The row only keeps launch tokens out of a dense export's text under plain mlx-lm
        # (and ``build --base`` refuses such a base); the chat loop masks them exactly.
        log(f"note: {e}; chat masks launch tokens out of text, so it is unaffected")
        row = np.zeros((int(text_config(base_config)["hidden_size"]),), np.float32)
    return CombinedModel(base_model, lay, row, runner)


def _open_demo(store, machine: MachineConfig, log) -> ChatModel:
    from .demo import calibration_text as demo_calibration
    from .demo import demo_splice_config, load_demo

    log("loading the demo chat model (widened to the splice's width)")
    config = demo_splice_config()  # the splice's base: hidden 1024, MLP 6144, 16 linear heads
    # Our runner runs the toy itself: the widening is exact (the same logits, bit for bit:
    # tests/test_widen.py), and the toy's prefill is ~100x cheaper on a CPU.
    model, tokenizer = load_demo()
    combined = combine_in_memory(model, config, tokenizer, store, machine, log, calibration=demo_calibration())
    return ChatModel(DEMO, combined, tokenizer, machine,
                     note="demo: a toy Qwen3.5-architecture model trained on templated arithmetic "
                          "questions (not Qwen); its launches run on the real circuit")


def _open_checkpoint(path: Path, store, log) -> ChatModel:
    from mlx_lm.tokenizer_utils import load as load_tokenizer

    from qwengpu_mlx.splice.runner import open_combined

    log(f"opening the combined checkpoint {path}")
    combined = open_combined(path, store)
    return ChatModel(str(path), combined, load_tokenizer(path), combined.circuit.machine)


def _open_base(spec: str, store, machine: MachineConfig, log) -> ChatModel:
    from qwengpu_mlx.compiler.sizing import QWEN35_2B
    from qwengpu_mlx.splice.build import check_fits, load_base
    from qwengpu_mlx.splice.layout import shape_sizes
    from qwengpu_mlx.splice.source import acquire

    log(f"fetching the base {spec} (config first; weights once, then from the cache)")
    src = acquire(spec, fits=lambda cfg: check_fits(cfg, shape_sizes(QWEN35_2B)))
    model, tokenizer = load_base(src.path)
    combined = combine_in_memory(model, src.config, tokenizer, store, machine, log)
    return ChatModel(spec, combined, tokenizer, machine)
