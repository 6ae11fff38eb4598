"""Qwen3.5 checkpoints that unmodified ``mlx_lm.load`` loads and runs.

A checkpoint directory holds:

* ``config.json`` -- the Qwen3.5 form: ``{"model_type": "qwen3_5", "architectures":
  [...], "tie_word_embeddings": ..., "text_config": {...}}``. mlx-lm reads the model
  hyper-parameters ONLY from ``text_config`` (``tie_word_embeddings`` included) and the
  rope ONLY from ``text_config.rope_parameters`` (flat ``rope_theta`` /
  ``partial_rotary_factor`` are overridden by its default ``rope_parameters``), so both
  are always written there. ``eos_token_id`` is top level (mlx-lm's stop tokens).
* ``model.safetensors`` -- MLX layout, keys ``language_model.model...`` and final norm
  values. mlx-lm's ``sanitize`` only shifts norms by +1 and moves the conv axis when
  some ``conv1d.weight`` has a last dim != 1 (HF layout); ours are ``[C, K, 1]``, so it
  leaves every tensor as saved.
* ``tokenizer.json`` + ``tokenizer_config.json`` -- one token per vocab entry (id =
  list position), in the Qwen ByteLevel-BPE form that transformers 5 imposes on
  ``qwen3_5`` checkpoints (see :func:`save_tokenizer`). ``decode`` gives the tokens'
  strings concatenated; ``encode`` matches tokens literally, longest first.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
import uuid
from collections import Counter
from pathlib import Path
from typing import Dict, Iterable, Iterator, Optional, Sequence, Tuple, Union

import mlx.core as mx
from mlx.utils import tree_flatten
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from qwengpu_mlx.core.errors import OutputError
from qwengpu_mlx.runtime.model import Model, ModelConfig

__all__ = [
    "text_config_dict",
    "checkpoint_config",
    "save_checkpoint",
    "atomic_directory",
    "check_output_dir",
    "load_checkpoint",
    "load_weights",
    "save_tokenizer",
    "random_config",
    "random_weights",
]


# ------------------------------------------------------------------------ config


def text_config_dict(config: Union[dict, ModelConfig]) -> dict:
    """The resolved text config as written to ``config.json["text_config"]``.

    Unknown keys of a given dict are kept (mlx-lm ignores them).
    """
    extra = {}
    if isinstance(config, dict):
        extra = dict(config.get("text_config", config))
        extra.pop("text_config", None)
        cfg = ModelConfig.from_dict(config)
    else:
        cfg = config
    rope = dict(cfg.rope_parameters or {})
    rope.pop("type", None)
    rope.update(
        rope_type="default",
        rope_theta=cfg.rope_theta,
        partial_rotary_factor=cfg.partial_rotary_factor,
    )
    rope.setdefault("mrope_section", [11, 11, 10])
    rope.setdefault("mrope_interleaved", True)
    n = cfg.num_hidden_layers
    resolved = {
        "model_type": "qwen3_5_text",
        "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size,
        "num_hidden_layers": n,
        "num_attention_heads": cfg.num_attention_heads,
        "num_key_value_heads": cfg.num_key_value_heads,
        "head_dim": cfg.head_dim,
        "rms_norm_eps": cfg.rms_norm_eps,
        "vocab_size": cfg.vocab_size,
        "max_position_embeddings": cfg.max_position_embeddings,
        "linear_num_key_heads": cfg.linear_num_key_heads,
        "linear_num_value_heads": cfg.linear_num_value_heads,
        "linear_key_head_dim": cfg.linear_key_head_dim,
        "linear_value_head_dim": cfg.linear_value_head_dim,
        "linear_conv_kernel_dim": cfg.linear_conv_kernel_dim,
        "full_attention_interval": cfg.full_attention_interval,
        "layer_types": [
            "linear_attention" if cfg.is_linear(i) else "full_attention" for i in range(n)
        ],
        "tie_word_embeddings": cfg.tie_word_embeddings,
        "attention_bias": cfg.attention_bias,
        "attn_output_gate": cfg.attn_output_gate,
        "hidden_act": "silu",
        "rope_theta": cfg.rope_theta,
        "partial_rotary_factor": cfg.partial_rotary_factor,
        "rope_parameters": rope,
    }
    extra.update(resolved)
    return extra


def checkpoint_config(
    config: Union[dict, ModelConfig], *, eos_token_id: Optional[int] = None, dtype: str = "bfloat16"
) -> dict:
    """The full ``config.json`` dict (``text_config`` nested, as Qwen3.5 ships it)."""
    text = text_config_dict(config)
    top = {}
    if isinstance(config, dict) and "text_config" in config:
        top = {k: v for k, v in config.items() if k != "text_config"}
    top.update(
        architectures=["Qwen3_5ForConditionalGeneration"],
        model_type="qwen3_5",
        tie_word_embeddings=text["tie_word_embeddings"],
        torch_dtype=dtype,
        text_config=text,
    )
    text["torch_dtype"] = dtype
    if eos_token_id is not None:
        top["eos_token_id"] = eos_token_id
        text["eos_token_id"] = eos_token_id
    return top


# --------------------------------------------------------------------- tokenizer

# Qwen3.5's pre-tokenizer split (transformers' Qwen3_5Tokenizer uses the same).
_QWEN_SPLIT_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|"""
    r""" ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)


def _bytes_to_unicode() -> Dict[int, str]:
    """GPT-2's byte -> printable char map used by ByteLevel tokenizers."""
    bs = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("\xa1"), ord("\xac") + 1))
        + list(range(ord("\xae"), ord("\xff") + 1))
    )
    cs = list(bs)
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


_BYTE_CHARS = _bytes_to_unicode()
_BYTE_ALPHABET = frozenset(_BYTE_CHARS.values())


def _byte_level(text: str) -> str:
    return "".join(_BYTE_CHARS[b] for b in text.encode("utf-8"))


def _raw_safe(token: str) -> bool:
    """True when the ByteLevel decoders give ``token`` back from its raw form: every
    char maps to itself (printable ASCII) or is outside the byte alphabet (space,
    controls, CJK, ...) and falls back to its UTF-8 bytes."""
    return all("!" <= c <= "~" or c not in _BYTE_ALPHABET for c in token)


def token_form(token: str) -> str:
    """The string stored for ``token`` in tokenizer.json's BPE vocab."""
    return token if _raw_safe(token) else _byte_level(token)


def save_tokenizer(
    out_dir: Union[str, Path],
    vocab: Sequence[str],
    *,
    eos_token: Optional[str] = None,
    special_tokens: Iterable[str] = (),
    model_max_length: int = 1 << 20,
) -> None:
    """Write ``tokenizer.json`` and ``tokenizer_config.json``: id = position in ``vocab``.

    transformers 5 loads every ``model_type: qwen3_5`` tokenizer as ``Qwen3_5Tokenizer``
    whatever ``tokenizer_class`` says, keeping only the vocab, merges and added tokens of
    tokenizer.json and imposing Qwen's ByteLevel BPE pipeline (NFC, regex split,
    ByteLevel). So the file IS such a pipeline: a merge-free BPE whose vocab holds each
    token in a form the ByteLevel decoders turn back into the token, so
    ``decode([i]) == vocab[i]`` and ``decode(ids)`` is the plain concatenation. For
    encoding text, tokens without Latin-1-range chars are added tokens (matched
    literally, longest first); tokens with such chars (e.g. ``"é"``) decode exactly but
    ``encode`` only finds them if they are single ByteLevel chars.
    """
    vocab = list(vocab)
    if any(not isinstance(t, str) or t == "" for t in vocab):
        raise ValueError("vocab entries must be non-empty strings")
    forms = {token_form(t): i for i, t in enumerate(vocab)}
    if len(forms) != len(vocab):
        counts = Counter(vocab)
        dups = [t for t, n in counts.items() if n > 1]
        raise ValueError(f"vocab has duplicate entries, e.g. {dups[:5]}")
    specials = list(dict.fromkeys([*(t for t in (eos_token,) if t), *special_tokens]))
    for t in specials:
        if t not in forms or not _raw_safe(t):
            raise ValueError(f"special token {t!r} must be in the vocab and ASCII-safe")

    tok = Tokenizer(models.BPE(forms, [], unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_QWEN_SPLIT_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    special_set = set(specials)
    plain = [t for t in vocab if _raw_safe(t) and t not in special_set]
    tok.add_tokens([AddedToken(t, normalized=False) for t in plain])
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in specials])
    if tok.get_vocab_size(with_added_tokens=True) != len(vocab):
        raise AssertionError("tokenizer size differs from the vocab list")

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tok.save(str(out_dir / "tokenizer.json"))
    # Explicit nulls: Qwen3_5Tokenizer would otherwise add "<|endoftext|>" as a new token.
    tcfg = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": model_max_length,
        "bos_token": None,
        "eos_token": eos_token,
        "pad_token": None,
        "unk_token": None,
        "add_bos_token": False,
        "add_eos_token": False,
        "add_prefix_space": False,
        "clean_up_tokenization_spaces": False,
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(tcfg, indent=2) + "\n")



# ----------------------------------------------------------- atomic directories


def _existing_ancestor(path: Path) -> Path:
    """The nearest of ``path``'s ancestors that exists (where a new directory would be made)."""
    for p in path.parents:
        if os.path.lexists(p):
            return p
    return Path(path.anchor or ".")


def check_output_dir(out: Union[str, Path], *, force: bool = False) -> None:
    """Refuse an output directory before any work: a non-empty one without ``force`` (new
    shards beside stale ones no longer load in mlx-lm, which reads every
    ``model*.safetensors``), a file in its place, or a place that cannot be written."""
    out = Path(out).absolute()
    try:
        if os.path.lexists(out):
            if not out.is_dir():
                raise OutputError(f"--out {out}: exists and is not a directory")
            entries = sorted(e.name for e in out.iterdir())
            if entries and not force:
                raise OutputError(f"--out {out} is not empty ({len(entries)} entries, e.g. {entries[0]!r}); "
                                  f"pass --force to replace it, or choose a new directory")
        parent = out.parent if os.path.lexists(out.parent) else _existing_ancestor(out)
        if not parent.is_dir():
            raise OutputError(f"--out {out}: {parent} is not a directory")
        _probe_writable(parent, out)
    except OSError as e:
        raise OutputError(f"--out {out}: {e.strerror or e}") from None


def _probe_writable(parent: Path, out: Path) -> None:
    """Make and remove a directory in ``parent``: the one test of writability that also holds
    for root and read-only file systems (``os.access`` says yes to both)."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=f".{out.name}.probe-", dir=parent))
    except OSError as e:
        raise OutputError(f"--out {out}: {parent} is not writable ({e.strerror or e})") from None


@contextlib.contextmanager
def atomic_directory(out: Union[str, Path], *, force: bool = False) -> Iterator[Path]:
    """Yield a new temporary directory beside ``out``; it becomes ``out`` when the block ends
    normally and is removed when it raises (Ctrl-C included).

    Why: a checkpoint is many files; written in place, an interrupt or a failure leaves a
    directory that looks like a checkpoint and does not load. The rename is the one step
    that makes the new checkpoint visible; an ``out`` that exists (empty, or ``force``) is
    moved aside first and removed after. Refusals are :class:`OutputError`."""
    out = Path(out).absolute()
    check_output_dir(out, force=force)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
        _chmod_as_mkdir(tmp)
    except OSError as e:
        raise OutputError(f"cannot write {out}: {e.strerror or e}") from None
    try:
        yield tmp
        _replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _chmod_as_mkdir(path: Path) -> None:
    """Give a ``mkdtemp`` directory (0700) the mode ``mkdir`` would: it becomes the user's checkpoint."""
    umask = os.umask(0o22)
    os.umask(umask)
    os.chmod(path, 0o777 & ~umask)


def _replace_dir(tmp: Path, out: Path) -> None:
    """Rename ``tmp`` to ``out``; an existing ``out`` is moved aside, restored if the rename fails."""
    aside = None
    if os.path.lexists(out):
        aside = out.with_name(f".{out.name}.old-{uuid.uuid4().hex[:8]}")
        os.rename(out, aside)
    try:
        os.rename(tmp, out)
    except BaseException:
        if aside is not None:
            os.rename(aside, out)
        raise
    if aside is not None:
        if aside.is_symlink():
            aside.unlink()
        else:
            shutil.rmtree(aside, ignore_errors=True)


# ------------------------------------------------------------------- save / load


def _check_part(want: Dict[str, mx.array], weights: Dict[str, mx.array]) -> None:
    extra = sorted(set(weights) - set(want))
    if extra:
        raise ValueError(f"weights do not match the config: extra {extra[:5]}")
    for k, v in weights.items():
        if tuple(v.shape) != tuple(want[k].shape):
            raise ValueError(f"{k}: shape {tuple(v.shape)}, config wants {tuple(want[k].shape)}")


def save_checkpoint(
    out_dir: Union[str, Path],
    config: Union[dict, ModelConfig],
    weights: Union[Dict[str, mx.array], Iterable[Dict[str, mx.array]]],
    vocab: Sequence[str],
    *,
    eos_token: Optional[str] = None,
    special_tokens: Iterable[str] = (),
    shards: int = 1,
    force: bool = False,
) -> Path:
    """Write a Qwen3.5 checkpoint that ``mlx_lm.load(out_dir)`` loads unmodified.

    Atomically (:func:`atomic_directory`): ``out_dir`` is the whole new checkpoint or is
    left as it was; a non-empty ``out_dir`` is refused unless ``force`` (then replaced).

    ``config``: text config (flat or nested in ``text_config``). ``weights``: this
    model's parameter names (``language_model.`` prefix optional; HF layout is
    converted), every tensor saved in its own dtype; or ``shards`` dicts of them, one
    per file (``model-0000k-of-0000n.safetensors`` and the index), consumed one at a time
    so a model larger than memory can be written. ``vocab``: token strings, id =
    position; ``len(vocab) <= vocab_size`` (rows past the vocab have no string).
    """
    cfg = config if isinstance(config, ModelConfig) else ModelConfig.from_dict(config)
    if len(vocab) > cfg.vocab_size:
        raise ValueError(f"{len(vocab)} tokens but vocab_size is {cfg.vocab_size}")
    model = Model(cfg)  # parameters stay lazy (never evaluated): used for names/shapes
    want = dict(tree_flatten(model.parameters()))
    parts = [weights] if isinstance(weights, dict) else weights
    eos_id = list(vocab).index(eos_token) if eos_token is not None else None

    out_dir = Path(out_dir)
    with atomic_directory(out_dir, force=force) as tmp:
        _write_checkpoint(tmp, config, model, want, parts, vocab, eos_token, eos_id, special_tokens, shards)
    return out_dir


def _write_checkpoint(out_dir: Path, config, model: Model, want: dict, parts, vocab, eos_token, eos_id,
                      special_tokens, shards: int) -> None:
    """The files of :func:`save_checkpoint`, into ``out_dir`` (its temporary directory)."""
    seen: Dict[str, str] = {}
    dtypes = set()
    written = 0
    for k, part in enumerate(parts):
        part = model.sanitize(dict(part))
        _check_part(want, part)
        name = "model.safetensors" if shards == 1 else f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        mx.save_safetensors(str(out_dir / name), part, metadata={"format": "mlx"})
        seen.update({key: name for key in part})
        dtypes |= {v.dtype for v in part.values()}
        written = k + 1
    if written != shards:
        raise ValueError(f"{written} weight parts written, {shards} announced in the shard names")
    missing = sorted(set(want) - set(seen))
    if missing:
        raise ValueError(f"weights do not match the config: missing {missing[:5]}")
    if shards > 1:
        (out_dir / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {"format": "mlx"}, "weight_map": seen}, indent=2) + "\n")
    dtype = "float32" if mx.float32 in dtypes and len(dtypes) == 1 else "bfloat16"
    if mx.float16 in dtypes:
        dtype = "float16"
    full = checkpoint_config(config, eos_token_id=eos_id, dtype=dtype)
    (out_dir / "config.json").write_text(json.dumps(full, indent=2) + "\n")
    save_tokenizer(out_dir, vocab, eos_token=eos_token, special_tokens=special_tokens)


def load_weights(model: Model, path: Union[str, Path], *, lazy: bool = False) -> Model:
    """Load ``model*.safetensors`` from a checkpoint dir into ``model`` (strict)."""
    weights = {}
    for f in sorted(Path(path).glob("model*.safetensors")):
        weights.update(mx.load(str(f)))
    if not weights:
        raise FileNotFoundError(f"no model*.safetensors in {path}")
    model.load_weights(list(model.sanitize(weights).items()), strict=True)
    if not lazy:
        mx.eval(model.parameters())
    return model


def load_checkpoint(path: Union[str, Path], *, lazy: bool = False) -> Tuple[Model, dict]:
    """Load a checkpoint dir with our :class:`~qwengpu_mlx.runtime.model.Model`.

    Returns ``(model, config)`` where ``config`` is the config.json dict.
    """
    path = Path(path)
    config = json.loads((path / "config.json").read_text())
    model = Model(ModelConfig.from_dict(config))
    load_weights(model, path, lazy=lazy)
    return model, config


# ------------------------------------------------------------------ random models


def random_config(
    hidden: int = 64,
    layers: int = 4,
    *,
    vocab_size: int = 96,
    intermediate: Optional[int] = None,
    full_attention_interval: int = 4,
    linear_key_heads: int = 2,
    linear_value_heads: int = 4,
    linear_key_dim: int = 16,
    linear_value_dim: int = 16,
    heads: int = 4,
    kv_heads: int = 2,
    head_dim: int = 16,
    tie: bool = True,
    rope_theta: float = 10_000_000.0,
) -> dict:
    """A small Qwen3.5-architecture text config (flat dict, Qwen3.5 key names)."""
    return {
        "model_type": "qwen3_5_text",
        "hidden_size": hidden,
        "intermediate_size": intermediate or 3 * hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "rms_norm_eps": 1e-6,
        "vocab_size": vocab_size,
        "max_position_embeddings": 4096,
        "linear_num_key_heads": linear_key_heads,
        "linear_num_value_heads": linear_value_heads,
        "linear_key_head_dim": linear_key_dim,
        "linear_value_head_dim": linear_value_dim,
        "linear_conv_kernel_dim": 4,
        "full_attention_interval": full_attention_interval,
        "tie_word_embeddings": tie,
        "attn_output_gate": True,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": rope_theta,
            "partial_rotary_factor": 0.25,
            "mrope_section": [11, 11, 10],
        },
    }


def random_weights(
    config: Union[dict, ModelConfig], seed: int = 0, dtype: mx.Dtype = mx.float32
) -> Dict[str, mx.array]:
    """Random weights (MLX layout, our names) with sane scales: norms near 1, linear
    layers ~ N(0, 1/fan_in), decays g in roughly (0.3, 1). ``A_log`` stays float32."""
    model = Model(config)
    params = tree_flatten(model.parameters())
    keys = mx.random.split(mx.random.key(seed), len(params))
    out = {}
    for k, (name, p) in zip(keys, params):
        shape = p.shape
        if name.endswith("A_log"):
            w = mx.log(mx.random.uniform(0.05, 0.5, shape, key=k))
            out[name] = w.astype(mx.float32)
            continue
        if name.endswith("dt_bias"):
            w = mx.random.uniform(-1.0, 1.0, shape, key=k)
        elif name.endswith("conv1d.weight"):
            w = mx.random.normal(shape, key=k) * 0.5
        elif p.ndim == 1:  # RMSNorm weights
            w = 1.0 + 0.1 * mx.random.normal(shape, key=k)
        elif name.endswith("embed_tokens.weight"):
            # Small next to the layers' outputs, so a tied model does not just echo.
            w = 0.2 * mx.random.normal(shape, key=k)
        else:  # Linear [out, in]
            w = mx.random.normal(shape, key=k) / math.sqrt(shape[-1])
        out[name] = w.astype(dtype)
    mx.eval(out)
    return out
