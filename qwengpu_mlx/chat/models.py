"""What ``--model`` names, for every command: one resolver, three kinds.

* ``demo``: the toy chat model shipped in the package (``chat.demo``), widened to the
  splice's width and combined with the circuit in memory;
* a directory ``build --base`` wrote (it has ``qwengpu-splice.json``): a combined
  checkpoint (``splice.runner``);
* any other directory (Hugging Face or mlx-community layout, bf16 or quantized) or a
  Hugging Face repo id: a Qwen3.5 base, fetched once (``splice.source``: config first,
  the fit check before any weight) and combined with the cached circuit on the fly: no
  dense export is needed.

Launches (``run``, ``compile --emit tokens``, ``check``) need only the machine, the
launch tokens' ids in the model's vocabulary and the circuit's runner
(:func:`open_launch_model`: a base's config, never its weights, since launches run on
the compact circuit); the chat needs the base too (:func:`open_chat_model`). Either way
an unusable ``--model`` is a :class:`ChatModelError` whose message says why and what to do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig

from qwengpu_mlx.chat.prefix import base_identity
from qwengpu_mlx.chat.startup import timed

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
    identity: str = ""  # its files as a cache key (chat.prefix); "": nothing cached on disk
    log: Callable[[str], None] = lambda s: None  # where start-up and cache notes go

    @property
    def has_tools(self) -> bool:
        return bool(self.tokenizer.has_tool_calling)


@dataclass
class LaunchModel:
    """What a launch needs of ``--model``: its machine, its ids, the circuit's runner."""

    name: str
    machine: MachineConfig
    layout: object  # splice.layout.SpliceLayout: launch tokens' ids in the model's vocabulary
    runner: object | None  # runtime Runner over the circuit; None when not asked for


DEMO_KIND, COMBINED_KIND, BASE_KIND = "demo", "combined", "base"


def model_kind(spec: str) -> str:
    """Which of the three kinds ``spec`` names; a path that does not exist is refused here."""
    from qwengpu_mlx.splice.build import SPLICE_RECORD

    if spec == DEMO:
        return DEMO_KIND
    path = Path(spec).expanduser()
    if (path / SPLICE_RECORD).is_file():
        return COMBINED_KIND
    if not path.exists() and _looks_like_a_path(spec):
        raise ChatModelError("no such directory (--model takes a Qwen3.5 directory, a Hugging Face "
                             "repo id such as Qwen/Qwen3.5-2B, or demo)")
    return BASE_KIND


def _model_errors():
    from qwengpu_mlx.splice.errors import SPLICE_ERRORS
    from qwengpu_mlx.splice.combined_runner import CombinedCheckpointError

    return (CombinedCheckpointError, *SPLICE_ERRORS)


def open_launch_model(spec: str, store, *, machine: MachineConfig = DEFAULT_MACHINE, runner: bool = True,
                      log: Callable[[str], None] = lambda s: None) -> LaunchModel:
    """``spec`` as launches see it (see the module docstring); ``runner``: build the circuit's runner."""
    try:
        kind = model_kind(spec)
        if kind == COMBINED_KIND:
            return _launch_checkpoint(Path(spec).expanduser(), store, runner)
        config = _demo_config() if kind == DEMO_KIND else _fetch_base(spec, log).config
        lay, run = _circuit_beside(config, store, machine, log, runner)
        return LaunchModel(spec, machine, lay, run)
    except _model_errors() as e:
        raise ChatModelError(str(e)) from None


def _launch_checkpoint(path: Path, store, runner: bool) -> LaunchModel:
    from qwengpu_mlx.splice.combined_runner import checkpoint_circuit, recorded_machine

    machine, lay = recorded_machine(path)
    run = checkpoint_circuit(path, store) if runner else None
    return LaunchModel(str(path), machine, lay, run)


def _demo_config() -> dict:
    from qwengpu_mlx.chat.demo import demo_splice_config

    return demo_splice_config()  # the splice's base: hidden 1024, MLP 6144, 16 linear heads


def open_chat_model(spec: str, store, *, machine: MachineConfig = DEFAULT_MACHINE,
                    log: Callable[[str], None] = lambda s: None) -> ChatModel:
    """The chat model ``spec`` names (see the module docstring)."""
    try:
        kind = model_kind(spec)
        if kind == DEMO_KIND:
            return _open_demo(store, machine, log)
        if kind == COMBINED_KIND:
            return _open_checkpoint(Path(spec).expanduser(), store, log)
        return _open_base(spec, store, machine, log)
    except _model_errors() as e:
        raise ChatModelError(str(e)) from None


def _looks_like_a_path(spec: str) -> bool:
    """A repo id is ``owner/name``: anything else with a separator, or rooted, is a path."""
    return spec.startswith(("/", ".", "~")) or spec.count("/") > 1 or "\\" in spec


def _circuit_beside(base_config: dict, store, machine: MachineConfig, log, runner: bool = True):
    """(layout, runner or None): the machine's circuit folded at Qwen3.5-2B's shape (compiled
    once, then from the circuit cache), checked to fit beside the base its config describes."""
    from qwengpu_mlx.splice.build import check_fits
    from qwengpu_mlx.splice.folded import folded_circuit
    from qwengpu_mlx.splice.layout import SpliceLayout, text_config

    with timed(log, f"the {machine_name(machine)} machine's circuit at Qwen3.5-2B's shape"):
        folded = folded_circuit(store, machine)
        check_fits(base_config, folded.config)
        lay = SpliceLayout(text_config(base_config), folded.config, folded.launch_tokens)
        run = store.runner_over(folded.compact, machine) if runner else None
    return lay, run


def machine_name(machine: MachineConfig) -> str:
    from qwengpu_mlx.core.machine import MACHINES

    return next((k for k, v in MACHINES.items() if v == machine), "custom")


def combine_in_memory(base_model, base_config: dict, store, machine: MachineConfig, log):
    """A base (mlx-lm model) combined with the circuit without writing the dense checkpoint.

    The launch rows' shared part in the base's dims is left at zero: it only keeps launch
    tokens out of a dense export's text under plain mlx-lm, while this chat masks them out
    of text exactly (``textgen``), so measuring it (a long prefill of the calibration text
    with full-vocabulary logits at every position, minutes on a CPU) would buy nothing."""
    import numpy as np

    from qwengpu_mlx.splice.layout import text_config
    from qwengpu_mlx.splice.combined_runner import CombinedModel

    lay, runner = _circuit_beside(base_config, store, machine, log)
    row = np.zeros((int(text_config(base_config)["hidden_size"]),), np.float32)
    return CombinedModel(base_model, lay, row, runner)


def _open_demo(store, machine: MachineConfig, log) -> ChatModel:
    from qwengpu_mlx.chat.demo import DEMO_DIR, load_demo

    with timed(log, "the demo chat model"):
        # Our runner runs the toy itself: the widening is exact (the same logits, bit for bit:
        # tests/splice/test_widen.py), and the toy's prefill is ~100x cheaper on a CPU.
        model, tokenizer = load_demo()
    combined = combine_in_memory(model, _demo_config(), store, machine, log)
    return ChatModel(DEMO, combined, tokenizer, machine,
                     note="demo: a toy Qwen3.5-architecture model trained on templated arithmetic "
                          "questions (not Qwen); its launches run on the real circuit",
                     identity=base_identity(DEMO_DIR), log=log)


def _open_checkpoint(path: Path, store, log) -> ChatModel:
    from mlx_lm.tokenizer_utils import load as load_tokenizer

    from qwengpu_mlx.splice.combined_runner import open_combined

    with timed(log, f"the combined checkpoint {path}"):
        combined = open_combined(path, store)
        tokenizer = load_tokenizer(path)
    return ChatModel(str(path), combined, tokenizer, combined.circuit.machine, identity=base_identity(path), log=log)


def _fetch_base(spec: str, log):
    """The base's files on local disk (a repo fetched once), its config checked to fit."""
    from qwengpu_mlx.compiler.sizing import QWEN35_2B
    from qwengpu_mlx.splice.build import check_fits
    from qwengpu_mlx.splice.layout import shape_sizes
    from qwengpu_mlx.splice.source import acquire

    with timed(log, f"the base {spec} (config first; weights once, then from the cache)"):
        return acquire(spec, fits=lambda cfg: check_fits(cfg, shape_sizes(QWEN35_2B)), hashes=False)


def _open_base(spec: str, store, machine: MachineConfig, log) -> ChatModel:
    from qwengpu_mlx.splice.build import load_base

    src = _fetch_base(spec, log)
    with timed(log, f"loading {spec} with mlx_lm.load"):
        model, tokenizer = load_base(src.path)
    combined = combine_in_memory(model, src.config, store, machine, log)
    return ChatModel(spec, combined, tokenizer, machine, identity=base_identity(src.path), log=log)
