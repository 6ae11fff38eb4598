"""Fixtures the chat tests share: the demo's tokenizer and a runner of the default machine.

A test module that needs another tokenizer or runner (a Qwen3.5 template's) defines its own
fixture of the same name, which pytest prefers to these.
"""

from __future__ import annotations

import pytest
from mlx_lm.tokenizer_utils import load

from qwengpu_mlx.chat.demo import DEMO_DIR
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE


@pytest.fixture(scope="module")
def tokenizer():
    """The demo chat model's tokenizer (the real Qwen3.5 tokenizer and template)."""
    return load(DEMO_DIR)


@pytest.fixture(scope="module")
def runner(store):
    """The default machine's runner, from the session's one circuit store."""
    return store.runner(PUBLISHED_MACHINE)
