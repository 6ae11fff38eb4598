"""The demo chat model: a toy trained Qwen3.5 that writes ``gpu_eval`` calls, widened for the splice.

``demo/`` (next to this file) holds a tiny Qwen3.5-architecture model (hidden 64) trained by
``scripts/train_demo_chat.py`` on ``demo_data``'s templated arithmetic conversations, with
its own byte-level BPE tokenizer and a Qwen3.5-style chat template (ChatML, tools listed in
``<tools>`` (a system prompt follows them, as in Qwen3.5's template), calls in Qwen3.5's XML form, so mlx-lm picks its ``qwen3_coder`` tool parser).
It is not Qwen: it exists so the chat loop can be exercised end to end where no Qwen3.5
checkpoint can be downloaded.

:func:`demo_base` widens it (``splice/widen.py``, logits unchanged) to a geometry the
circuit fits beside: hidden 1024, MLP 6144, 16 linear heads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import mlx.core as mx
import mlx_lm
from mlx.utils import tree_flatten
from mlx_lm.generate import generate_step
from mlx_lm.models import qwen3_5
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, MachineConfig
from qwengpu_mlx.splice.widen import target_config, widen

from qwengpu_mlx.chat.tools import tools_for

DEMO_DIR = Path(__file__).with_name("demo")
TOOLS_FILE = "tools.json"  # in DEMO_DIR: the tools as the demo was trained with them

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# Added like Qwen's: plain added tokens (not "special"), so decoding keeps them in the text.
MARKER_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>")

# Qwen2/3's pre-tokenizer split: digits one by one, newlines apart from words.
SPLIT_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")

CHAT_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n# Tools\\n\\nYou have access to the following functions:\\n\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nIf you choose to call a function ONLY reply in the following format with NO suffix:"
    "\\n\\n<tool_call>\\n<function=example_function_name>\\n<parameter=example_parameter_1>\\nvalue_1"
    "\\n</parameter>\\n</function>\\n</tool_call>' }}"
    "{%- if messages and messages[0].role == 'system' %}{{- '\\n\\n' + messages[0].content | trim }}{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif messages and messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content | trim + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' %}"
    "{{- '<|im_start|>user\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}"
    "{%- set content = (message.content or '') | trim %}"
    "{{- '<|im_start|>assistant\\n' + content }}"
    "{%- for tool_call in message.tool_calls or [] %}"
    "{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}"
    "{%- if loop.first and content %}{{- '\\n\\n' }}{%- elif not loop.first %}{{- '\\n' }}{%- endif %}"
    "{{- '<tool_call>\\n<function=' + tool_call.name + '>\\n' }}"
    "{%- if tool_call.arguments is mapping %}"
    "{%- for args_name, args_value in tool_call.arguments | items %}"
    "{{- '<parameter=' + args_name + '>\\n' }}"
    "{%- set args_value = args_value if args_value is string else args_value | tojson | safe %}"
    "{{- args_value + '\\n</parameter>\\n' }}"
    "{%- endfor %}"
    "{%- endif %}"
    "{{- '</function>\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- elif message.role == 'system' and not loop.first %}"
    "{{- '<|im_start|>system\\n' + message.content | trim + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

# The widened geometry demo_base() returns: the QWEN35_2B circuit fits beside it.
DEMO_TARGET = {"hidden_size": 1024, "intermediate_size": 6144, "linear_num_key_heads": 16,
               "linear_num_value_heads": 16}


def build_tokenizer(texts, vocab_size: int):
    """A byte-level BPE trained on ``texts`` (chat-rendered strings), Qwen's split, our specials.

    Special and marker strings are cut out of the training text so BPE never merges into
    them; digits stay single tokens so copying a number is copying digits."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    cut = re.compile("|".join(re.escape(s) for s in SPECIAL_TOKENS + MARKER_TOKENS))
    pieces = (p for t in texts for p in cut.split(t) if p)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(pieces, trainer)
    tok.add_tokens([AddedToken(s, special=False, normalized=False) for s in MARKER_TOKENS])
    return tok


def tokenizer_config() -> dict:
    """tokenizer_config.json: the template, ChatML's eos, no bos (as Qwen)."""
    return {"tokenizer_class": "PreTrainedTokenizerFast", "chat_template": CHAT_TEMPLATE,
            "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "bos_token": None,
            "unk_token": None, "add_bos_token": False, "clean_up_tokenization_spaces": False,
            "model_max_length": 4096, "split_special_tokens": False}


def demo_config(path: Path = DEMO_DIR) -> dict:
    """The fixture's config.json."""
    return json.loads((path / "config.json").read_text())


def load_demo(path: Path = DEMO_DIR):
    """(model, tokenizer wrapper) of the tiny fixture, through mlx-lm."""
    return mlx_lm.load(str(path))


def demo_tools(path: Path = DEMO_DIR, machine: MachineConfig = PUBLISHED_MACHINE) -> dict[str, list[dict]]:
    """The tools offered to the demo, per mode: the descriptions it was trained with, pinned
    beside its weights (``demo/tools.json``), since a toy this small writes the right call
    only after the prompt it learned (a later ``gpu_eval`` description made it write
    ``[1] @ [3]`` for ``[1, 2] @ [3, 4]``); a mode it was not trained on gets today's, with
    ``machine``'s limits (``tools.tools_for``)."""
    pinned = json.loads((path / TOOLS_FILE).read_text())
    return {mode: pinned.get(mode, tools) for mode, tools in tools_for(machine).items()}


def demo_splice_config(path: Path = DEMO_DIR, target: dict | None = None) -> dict:
    """The widened demo's full config (what the splice sees), without widening any weight."""
    config = demo_config(path)
    return {**config, "text_config": target_config(config["text_config"], target or DEMO_TARGET)}


def demo_base(path: Path = DEMO_DIR, target: dict | None = None):
    """The demo model widened for the splice: ``(mlx-lm Model, tokenizer wrapper, full config)``.

    The widened model's logits are the tiny one's (``splice/widen.py`` says how exactly);
    its text config passes ``splice_misfits`` for the QWEN35_2B circuit sizes."""
    model, tokenizer = load_demo(path)
    config = demo_config(path)
    weights = dict(tree_flatten(model.parameters()))
    weights = {k: v.astype(mx.float32) if k.endswith("A_log") else v for k, v in weights.items()}
    wide, text = widen(weights, config["text_config"], target or DEMO_TARGET)
    full = {**config, "text_config": text}
    wide_model = qwen3_5.Model(qwen3_5.ModelArgs.from_dict(full))
    wide_model.load_weights(list(wide.items()))
    wide_model.eval()
    mx.eval(wide_model.parameters())
    return wide_model, tokenizer, full


def greedy_reply(model, tok, messages: list[dict], stop: str | None = None, max_tokens: int = 120) -> str:
    """The model's greedy reply to ``messages`` (tools offered), until ``<|im_end|>`` or ``stop``:
    mlx-lm's own generation, for the training script's evaluation and the fixture's tests."""
    prompt = mx.array(tok.apply_chat_template(messages, tools=demo_tools()["normal"], add_generation_prompt=True))
    detok = tok.detokenizer
    detok.reset()
    for token, _ in generate_step(prompt, model, max_tokens=max_tokens):
        if token in tok.eos_token_ids:
            break
        detok.add_token(token)
        if stop and stop in detok.text:
            break
    detok.finalize()
    return detok.text
