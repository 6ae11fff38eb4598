"""The base's tokenizer with the launch tokens added as special tokens, at their own ids.

A launch token's id is its embedding row, after all of the base's rows. Qwen3.5's
embedding has 248,320 rows but its tokenizer only 248,077 entries, so the launch ids
leave a gap after the base's tokenizer. No loader keeps such a gap: ``tokenizers``
ignores the ids written in ``tokenizer.json``'s ``added_tokens`` and numbers each token
not in the model's vocab from the next free id, and transformers' ``Qwen3_5Tokenizer``
rebuilds the backend and adds ``added_tokens_decoder`` one after the other in the same
way. So every id of the gap gets a placeholder special token (``<|reserved_token_ID|>``,
transformers' own name for the same case) and the launch tokens land on their ids.

Everything of the base's (vocab, merges, its own added tokens, normalizer, pre-tokenizer,
decoder, chat template) is copied unchanged; each launch token is matched literally as
one id, never split and never normalized.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from tokenizers import Tokenizer

# The base's other tokenizer files, copied as they are: with tokenizer.json present no
# loader takes the added tokens' ids from any of them.
COPIED = ("special_tokens_map.json", "vocab.json", "merges.txt", "chat_template.jinja", "chat_template.json",
          "generation_config.json")
RESERVED = "<|reserved_token_{}|>"


class TokenizerExtensionError(ValueError):
    """A launch token collides with the base's tokenizer, or its ids would overlap the base's."""


@dataclass(frozen=True)
class TokenizerExtension:
    """What ``extend_tokenizer`` wrote: launch ids ``first_id .. first_id + count - 1``,
    ``reserved`` placeholders on the ids between the base's tokenizer and ``first_id``."""

    first_id: int
    count: int
    reserved: int
    files: tuple[Path, ...]


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _write_json(path: Path, data: dict, indent: int | None = None) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=indent), encoding="utf-8")
    return path


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> character map that byte-level BPE vocabs (Qwen's) are spelled in."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    moved = [b for b in range(256) if b not in keep]
    return {**{b: chr(b) for b in keep}, **{b: chr(256 + n) for n, b in enumerate(moved)}}


BYTE_LEVEL = _bytes_to_unicode()


def _byte_level(text: str) -> str:
    """``text`` as a byte-level BPE vocab spells it, so that a launch string already in
    Qwen's vocab is found even where it is not plain printable ASCII."""
    return "".join(BYTE_LEVEL[b] for b in text.encode("utf-8"))


def _vocab(tok: dict) -> dict[str, int]:
    """The model's own vocab as {piece: id} (BPE/WordPiece store a dict, Unigram a list)."""
    vocab = tok.get("model", {}).get("vocab", {})
    if isinstance(vocab, dict):
        return vocab
    return {(piece[0] if isinstance(piece, list) else piece): i for i, piece in enumerate(vocab)}


def base_size(tok: dict) -> int:
    """The number of ids a parsed ``tokenizer.json`` names: its highest id + 1."""
    ids = [*_vocab(tok).values(), *(a["id"] for a in tok.get("added_tokens", []))]
    return max(ids, default=-1) + 1


def _added(content: str, token_id: int) -> dict:
    return {"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def _check_new(tok: dict, contents: Iterable[str]) -> None:
    """Refuse a new token that the base already has, or that comes twice."""
    known = set(_vocab(tok)) | {a["content"] for a in tok.get("added_tokens", [])}
    seen: set[str] = set()
    for content in contents:
        if content in known or _byte_level(content) in known:
            raise TokenizerExtensionError(f"{content!r} is already a token of the base tokenizer")
        if content in seen:
            raise TokenizerExtensionError(f"{content!r} is listed twice among the launch tokens")
        seen.add(content)


def _extended_config(cfg: dict, new: list[dict]) -> dict:
    """tokenizer_config.json with the new tokens in ``added_tokens_decoder``, where the base
    has one: transformers then takes added tokens from it instead of from tokenizer.json."""
    if "added_tokens_decoder" not in cfg:
        return cfg
    entries = {str(a["id"]): {k: v for k, v in a.items() if k != "id"} for a in new}
    return {**cfg, "added_tokens_decoder": {**cfg["added_tokens_decoder"], **entries}}


def _copy_present(base_dir: Path, out_dir: Path) -> list[Path]:
    copied = []
    for name in COPIED:
        if (base_dir / name).is_file():
            copied.append(Path(shutil.copyfile(base_dir / name, out_dir / name)))
    return copied


def extend_tokenizer(base_dir: Path, out_dir: Path, launch_tokens: Sequence[str], first_id: int) -> TokenizerExtension:
    """Write the base's tokenizer files to ``out_dir`` with ``launch_tokens[i]`` at id
    ``first_id + i`` (``first_id``: the first embedding row after the base's rows)."""
    base_dir, out_dir = Path(base_dir), Path(out_dir)
    if out_dir.resolve() == base_dir.resolve():
        raise TokenizerExtensionError(f"{out_dir}: the extended tokenizer must not overwrite the base's files")
    tok = _read_json(base_dir / "tokenizer.json")
    size = base_size(tok)
    if first_id < size:
        raise TokenizerExtensionError(f"launch ids would start at {first_id:,}, inside the base tokenizer's "
                                      f"{size:,} ids")
    contents = [RESERVED.format(i) for i in range(size, first_id)] + list(launch_tokens)
    _check_new(tok, contents)
    new = [_added(content, token_id) for token_id, content in enumerate(contents, start=size)]
    out_dir.mkdir(parents=True, exist_ok=True)
    files = [_write_json(out_dir / "tokenizer.json", {**tok, "added_tokens": [*tok.get("added_tokens", []), *new]})]
    if (base_dir / "tokenizer_config.json").is_file():
        cfg = _extended_config(_read_json(base_dir / "tokenizer_config.json"), new)
        files.append(_write_json(out_dir / "tokenizer_config.json", cfg, indent=2))
    files += _copy_present(base_dir, out_dir)
    return TokenizerExtension(first_id, len(launch_tokens), first_id - size, tuple(files))


def launch_token_ids(tokenizer_dir: Path, first_id: int = 0) -> dict[str, int]:
    """The added tokens from ``first_id`` on and their ids, as ``tokenizers`` numbers them
    on loading (not as the file claims: a loader renumbers tokens past a gap)."""
    decoder = Tokenizer.from_file(str(Path(tokenizer_dir) / "tokenizer.json")).get_added_tokens_decoder()
    return {token.content: token_id for token_id, token in sorted(decoder.items()) if token_id >= first_id}
