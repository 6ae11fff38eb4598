"""The base's tokenizer with the launch tokens added as special tokens, at their own ids.

A launch token's id is its embedding row: after all of the base's rows (Qwen3.5's
embedding has 248,320 rows, more than its tokenizer has entries), so ids can leave a gap
that ``tokenizers`` keeps as it is. Everything of the base's (vocab, merges, its own
added tokens, normalizer, pre-tokenizer, decoder, chat template) is copied unchanged;
each launch token is matched literally as one id, never split and never normalized.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

COPIED = ["special_tokens_map.json", "vocab.json", "merges.txt", "chat_template.jinja", "chat_template.json",
          "generation_config.json"]


class TokenizerExtensionError(ValueError):
    """A launch token collides with the base's tokenizer, or its ids would overlap the base's."""


@dataclass(frozen=True)
class TokenizerExtension:
    first_id: int
    count: int


def _added(content: str, i: int) -> dict:
    return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def _base_size(tok: dict) -> int:
    vocab = tok.get("model", {}).get("vocab", {})
    ids = list(vocab.values()) if isinstance(vocab, dict) else list(range(len(vocab)))
    ids += [a["id"] for a in tok.get("added_tokens", [])]
    return max(ids) + 1 if ids else 0


def extend_tokenizer(base_dir: Path, out_dir: Path, launch_tokens: Sequence[str], first_id: int) -> TokenizerExtension:
    """Write the base's tokenizer files to ``out_dir`` with ``launch_tokens`` at ``first_id + i``."""
    base_dir, out_dir = Path(base_dir), Path(out_dir)
    tok = json.loads((base_dir / "tokenizer.json").read_text(encoding="utf-8"))
    size = _base_size(tok)
    if first_id < size:
        raise TokenizerExtensionError(f"launch ids would start at {first_id:,}, inside the base tokenizer's "
                                      f"{size:,} ids")
    vocab = tok.get("model", {}).get("vocab", {})
    known = set(vocab) if isinstance(vocab, dict) else set()
    known |= {a["content"] for a in tok.get("added_tokens", [])}
    clash = [t for t in launch_tokens if t in known]
    if clash:
        raise TokenizerExtensionError(f"launch token {clash[0]!r} is already a token of the base tokenizer")
    new = [_added(t, first_id + i) for i, t in enumerate(launch_tokens)]
    tok["added_tokens"] = list(tok.get("added_tokens", [])) + new
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False), encoding="utf-8")
    cfg_path = base_dir / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8")) if cfg_path.is_file() else {}
    if "added_tokens_decoder" in cfg:
        cfg["added_tokens_decoder"] = {**cfg["added_tokens_decoder"],
                                       **{str(a["id"]): {k: v for k, v in a.items() if k != "id"} for a in new}}
    (out_dir / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2, ensure_ascii=False), encoding="utf-8")
    for name in COPIED:
        if (base_dir / name).is_file():
            shutil.copyfile(base_dir / name, out_dir / name)
    return TokenizerExtension(first_id, len(new))


def launch_token_ids(tokenizer_dir: Path) -> dict[str, int]:
    """Every special added token of a tokenizer.json and its id (to check an extension)."""
    tok = json.loads((Path(tokenizer_dir) / "tokenizer.json").read_text(encoding="utf-8"))
    return {a["content"]: a["id"] for a in tok.get("added_tokens", []) if a.get("special")}
