"""What the status bar's ``model:`` names: the weights that run the launches on the screen.

A ``/run`` runs on the embedded circuit at the machine its request names (a program's
launches on the large machine, a kernel's ``.json`` may name one); a chat turn's launches
run on the chat model's own weights, the circuit spliced into them. The label follows the
job under way, so it never names a machine or a model that is not running.
"""

from __future__ import annotations

from qwengpu_mlx.core.machine import MACHINES, machine_name


def machine_title(key: str) -> str:
    """The machine's own name: ``default`` is another name of one of the others."""
    return machine_name(MACHINES[key], key)


def circuit_label(machine: str) -> str:
    """The embedded circuit at machine ``machine`` (a ``MACHINES`` key)."""
    return f"embedded circuit ({machine_title(machine)} machine)"


def run_label(machine: str, chat) -> str:
    """The status bar's model while a /run (or nothing) is on the screen; the chat model, when
    there is one, is named beside it."""
    circuit = circuit_label(machine)
    return f"{circuit}; chat: {chat.name}" if chat.available else circuit


def chat_label(chat) -> str:
    """The status bar's model during a chat turn: its launches run on the chat model itself."""
    return f"{chat.name} (chat model; its launches on the circuit spliced into it)"
