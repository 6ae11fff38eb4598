"""What ``--model`` names, opened: one resolver, three kinds, plain arguments.

* ``demo``: a model its caller defines (``demo_config``: the config the splice sees; the
  chat's toy model, widened, is the one ``chat.models`` passes);
* a directory ``build --base`` wrote (it has ``qwengpu-splice.json``): a combined
  checkpoint (``combined_runner``);
* any other directory (Hugging Face or mlx-community layout, bf16 or quantized) or a
  Hugging Face repo id: a Qwen3.5 base, fetched once (``source.acquire``: config first,
  the fit check before any weight) and combined with the cached circuit on the fly: no
  dense export is needed.

Launches (``run``, ``compile --emit tokens``, ``check``) need only the machine, the
launch tokens' ids in the model's vocabulary and the circuit's runner
(:func:`open_launch_model`: a base's config, never its weights, since launches run on the
compact circuit). A base model already in memory is combined by :func:`combine_base`. An
unusable ``--model`` is a :class:`ModelOpenError` whose message says why and what to do.

``step(what)``, where a function takes it, is a context manager around each slow step
(a caller's progress report; none by default). ``machine`` None (none named): the default
machine when its circuit fits the base's shape, else the published one, said on ``say``
(``machine_choice``).
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager

from qwengpu_mlx.compiler.sizing import QWEN35_2B
from qwengpu_mlx.core.machine import MachineConfig, machine_name

from qwengpu_mlx.splice.build import SPLICE_RECORD, check_fits
from qwengpu_mlx.splice.combined_runner import CombinedCheckpointError, checkpoint_circuit, combine, recorded_machine
from qwengpu_mlx.splice.errors import SPLICE_ERRORS
from qwengpu_mlx.splice.folded import folded_circuit
from qwengpu_mlx.splice.layout import SpliceLayout, shape_sizes, text_config
from qwengpu_mlx.splice.machine_choice import fitting_machine
from qwengpu_mlx.splice.source import acquire

DEMO = "demo"
DEMO_KIND, COMBINED_KIND, BASE_KIND = "demo", "combined", "base"

Step = Callable[[str], ContextManager]


def no_step(what: str) -> ContextManager:
    """The default ``step``: the work runs unreported."""
    return nullcontext()


def note_on_stderr(line: str) -> None:
    """The default ``say``: a line the user should read, whatever else is quiet."""
    print(f"note: {line}", file=sys.stderr, flush=True)


class ModelOpenError(ValueError):
    """``--model`` cannot be opened; the message says why."""


@dataclass
class LaunchModel:
    """What a launch needs of ``--model``: its machine, its ids, the circuit's runner."""

    name: str
    machine: MachineConfig
    layout: object  # splice.layout.SpliceLayout: launch tokens' ids in the model's vocabulary
    runner: object | None  # runtime Runner over the circuit; None when not asked for


def model_kind(spec: str) -> str:
    """Which of the three kinds ``spec`` names; a path that does not exist is refused here."""
    if spec == DEMO:
        return DEMO_KIND
    path = Path(spec).expanduser()
    if (path / SPLICE_RECORD).is_file():
        return COMBINED_KIND
    if not path.exists() and _looks_like_a_path(spec):
        raise ModelOpenError("no such directory (--model takes a Qwen3.5 directory, a Hugging Face "
                             "repo id such as Qwen/Qwen3.5-2B, or demo)")
    return BASE_KIND


def _looks_like_a_path(spec: str) -> bool:
    """A repo id is ``owner/name``: anything else with a separator, or rooted, is a path."""
    return spec.startswith(("/", ".", "~")) or spec.count("/") > 1 or "\\" in spec


def open_errors() -> tuple:
    """The refusals opening a model can meet (each a ValueError whose message is for a person)."""
    return (CombinedCheckpointError, *SPLICE_ERRORS)


def open_launch_model(spec: str, store, *, machine: MachineConfig | None = None, runner: bool = True,
                      demo_config: Callable[[], dict] | None = None, step: Step = no_step,
                      say: Callable[[str], None] = note_on_stderr) -> LaunchModel:
    """``spec`` as launches see it (see the module docstring); ``runner``: build the circuit's runner;
    ``demo_config``: the full config ``demo`` names (None: there is no demo here)."""
    try:
        kind = model_kind(spec)
        if kind == COMBINED_KIND:
            return _launch_checkpoint(Path(spec).expanduser(), store, runner)
        if kind == DEMO_KIND:
            if demo_config is None:
                raise ModelOpenError("there is no demo model here (--model takes a Qwen3.5 directory or a "
                                     "Hugging Face repo id)")
            config = demo_config()
        else:
            config = fetch_base(spec, step=step).config
        machine, lay, run = circuit_beside(config, store, machine, runner=runner, step=step, say=say)
        return LaunchModel(spec, machine, lay, run)
    except open_errors() as e:
        raise ModelOpenError(str(e)) from None


def _launch_checkpoint(path: Path, store, runner: bool) -> LaunchModel:
    machine, lay = recorded_machine(path)
    run = checkpoint_circuit(path, store) if runner else None
    return LaunchModel(str(path), machine, lay, run)


def fetch_base(spec: str, *, step: Step = no_step):
    """The base's files on local disk (a repo fetched once), its config checked to fit:
    a ``source.BaseSource``, no hashes (nothing here writes a manifest)."""
    with step(f"the base {spec} (config first; weights once, then from the cache)"):
        return acquire(spec, fits=lambda cfg: check_fits(cfg, shape_sizes(QWEN35_2B)), hashes=False)


def circuit_beside(base_config: dict, store, machine: MachineConfig | None, *, runner: bool = True,
                   step: Step = no_step, say: Callable[[str], None] = note_on_stderr):
    """(machine, layout, runner or None): the machine's circuit folded at Qwen3.5-2B's shape
    (compiled once, then from the circuit cache), checked to fit beside the base its config
    describes; ``machine`` None: the default machine's when it fits, else the published one's."""

    def beside(m: MachineConfig):
        with step(f"the {machine_name(m)} machine's circuit at Qwen3.5-2B's shape"):
            folded = folded_circuit(store, m)
            check_fits(base_config, folded.config)
            lay = SpliceLayout(text_config(base_config), folded.config, folded.launch_tokens)
            return lay, store.runner_over(folded.compact, m) if runner else None

    machine, (lay, run) = fitting_machine(machine, beside, say=say)
    return machine, lay, run


def combine_base(base_model, base_config: dict, store, *, machine: MachineConfig | None = None,
                 step: Step = no_step, say: Callable[[str], None] = note_on_stderr):
    """A base (mlx-lm model) combined with the circuit without writing the dense checkpoint.

    The launch rows' shared part in the base's dims is left at zero: it only keeps launch
    tokens out of a dense export's text under plain mlx-lm, while the chat masks them out
    of text exactly (``textgen``), so measuring it (a long prefill of the calibration text
    with full-vocabulary logits at every position, minutes on a CPU) would buy nothing."""
    _, lay, runner = circuit_beside(base_config, store, machine, step=step, say=say)
    return combine(base_model, lay, runner)
