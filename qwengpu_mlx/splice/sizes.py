"""The size model: what a combined checkpoint takes on disk and in unmodified mlx-lm.

Why a model: the combined Qwen3.5-2B takes half an hour to build here and more memory
than this machine has to run, so its size is predicted from the config alone (``build
--base`` says it before it starts) and checked against measurements at reduced depth
(``bench/size_model.py``). Where the bytes go in ``mlx_lm.load`` + ``generate``:

* **weights**: every tensor as stored; ``load`` evaluates them all, so load's peak is
  the files' size. Base matrices keep the base's format at the combined width ``4 H``
  (an in-projection gets zero columns, an output projection zero rows: zero groups in a
  quantized base, zeros in a dense one); the embedding has ``V + N`` rows (the base's
  vocabulary and the ``N`` launch tokens) of ``4 H``; the circuit's matrices are in the
  formats ``storage.py`` picks (measured per module: ``CIRCUIT_FORMATS``);
* **promoted copies**: the circuit's float32 norms make the stream float32 from the
  first circuit layer on, and MLX computes a float32 activation times a bfloat16 matrix
  by first casting the whole matrix to float32, at every token. A quantized matrix is
  never cast (its kernel reads the codes). So a dense bfloat16 base's tied embedding,
  used as the output layer on the float32 final state, costs a float32 copy of
  ``(V + N) x 4 H`` at each token (8.5 GB for Qwen3.5-2B), and each dense bfloat16
  circuit matrix a float32 copy of itself while its layer runs;
* **activations and caches**: a prefill chunk's activations at ``4 H`` and the MLP
  width, the recurrent states (float32, Hv x Dv x Dk per linear layer), the attention
  layers' KV caches: megabytes for the prompts here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

GB = 1e9
LAUNCH_TOKENS = 10_414  # the published machine's vocabulary (the launch rows)
WIDTH = 4  # layout.WIDTH_FACTOR, kept here so the model needs the config alone
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}

# How storage.py stored the published machine's 45 circuit layers at Qwen3.5-2B's layout:
# module -> {format: matrices} (bench/size_model.py --circuit prints this table;
# measured 2026-12-04). Other widths are predicted with the same formats.
CIRCUIT_FORMATS: dict[str, dict[str, int]] = {
    "down_proj": {"mxfp4": 36, "mxfp8": 9},
    "gate_proj": {"affine2/g128/bfloat16": 13, "affine4/g128/float32": 4, "affine4/g64/float32": 2,
                  "affine8/g128/bfloat16": 2, "affine8/g128/float32": 7, "affine8/g64/float32": 1,
                  "affine8/g32/float32": 1, "mxfp8": 5, "bfloat16": 1, "float32": 9},
    "in_proj_a": {"affine2/g128/bfloat16": 34},
    "in_proj_b": {"affine2/g128/bfloat16": 34},
    "in_proj_qkv": {"affine2/g128/bfloat16": 22, "mxfp8": 9, "bfloat16": 3},
    "in_proj_z": {"affine2/g128/bfloat16": 34},
    "out_proj": {"affine2/g128/bfloat16": 29, "affine2/g128/float32": 5},
    "up_proj": {"affine2/g128/bfloat16": 45},
    "q_proj": {"affine2/g128/bfloat16": 11},
    "k_proj": {"affine2/g128/bfloat16": 11},
    "v_proj": {"affine2/g128/bfloat16": 11},
    "o_proj": {"affine2/g128/bfloat16": 11},
}


@dataclass(frozen=True)
class BaseFormat:
    """How the base stores its matrices: a dense dtype, or affine codes of ``bits`` in
    groups of ``group_size`` with scales and biases in ``dtype``."""

    dtype: str = "bfloat16"
    bits: int | None = None
    group_size: int | None = None

    @property
    def name(self) -> str:
        return f"{self.bits}-bit" if self.bits else self.dtype

    def matrix(self, rows: int, cols: int) -> int:
        """Bytes of a [rows, cols] matrix in this format."""
        if self.bits is None:
            return rows * cols * DTYPE_BYTES[self.dtype]
        return rows * cols * self.bits // 8 + 2 * rows * (cols // self.group_size) * DTYPE_BYTES[self.dtype]

    def vector(self, n: int) -> int:
        return n * DTYPE_BYTES[self.dtype]


def base_format(config: dict) -> BaseFormat:
    """The base's format from its config.json (``quantization`` as mlx-lm writes it)."""
    text = config.get("text_config", config)
    q = config.get("quantization") or text.get("quantization")
    dtype = str(config.get("torch_dtype") or config.get("dtype") or text.get("torch_dtype") or text.get("dtype")
                or "bfloat16")
    if q:
        return BaseFormat(dtype if dtype in DTYPE_BYTES else "bfloat16", int(q["bits"]), int(q["group_size"]))
    return BaseFormat(dtype if dtype in DTYPE_BYTES else "bfloat16")


def format_bytes(fmt: str, rows: int, cols: int) -> int:
    """Bytes of a [rows, cols] circuit matrix stored as ``fmt`` (``storage.py``'s names)."""
    if fmt.startswith("affine"):
        bits, gs, dtype = fmt[len("affine"):].split("/")
        return BaseFormat(dtype, int(bits), int(gs[1:])).matrix(rows, cols)
    if fmt in ("mxfp4", "mxfp8"):
        return rows * cols * int(fmt[-1]) // 8 + rows * cols // 32
    return rows * cols * DTYPE_BYTES[fmt]


def _geometry(text: dict) -> dict[str, int]:
    g = {k: int(text[k]) for k in ("hidden_size", "intermediate_size", "linear_num_key_heads",
                                   "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
                                   "num_attention_heads", "num_key_value_heads", "head_dim")}
    g["conv"] = int(text.get("linear_conv_kernel_dim", 4))
    g["interval"] = int(text.get("full_attention_interval", 4))
    return g


def module_shapes(text: dict, linear: bool) -> dict[str, tuple[int, int, str]]:
    """module -> (rows, cols, side) of one layer's matrices at the base's own width; side
    ``in`` reads the residual (its columns widen), ``out`` writes it (its rows widen)."""
    g = _geometry(text)
    H, inter = g["hidden_size"], g["intermediate_size"]
    mlp = {"gate_proj": (inter, H, "in"), "up_proj": (inter, H, "in"), "down_proj": (H, inter, "out")}
    if not linear:
        D, Hq, KV = g["head_dim"], g["num_attention_heads"], g["num_key_value_heads"]
        return {**mlp, "q_proj": (2 * Hq * D, H, "in"), "k_proj": (KV * D, H, "in"), "v_proj": (KV * D, H, "in"),
                "o_proj": (H, Hq * D, "out")}
    Hk, Hv, Dk, Dv = (g[k] for k in ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                                     "linear_value_head_dim"))
    return {**mlp, "in_proj_qkv": (2 * Hk * Dk + Hv * Dv, H, "in"), "in_proj_z": (Hv * Dv, H, "in"),
            "in_proj_b": (Hv, H, "in"), "in_proj_a": (Hv, H, "in"), "out_proj": (H, Hv * Dv, "out")}


def widened(rows: int, cols: int, side: str, factor: int = WIDTH) -> tuple[int, int]:
    return (rows, cols * factor) if side == "in" else (rows * factor, cols)


def _small_tensors(text: dict, linear: bool, vector_bytes: int) -> int:
    """Bytes of a layer's norms, conv and decay parameters (``vector_bytes`` per value,
    ``A_log`` float32; the two layer norms are at the combined width)."""
    g = _geometry(text)
    n = 2 * WIDTH * g["hidden_size"]
    if not linear:
        return (n + 2 * g["head_dim"]) * vector_bytes
    qkv = 2 * g["linear_num_key_heads"] * g["linear_key_head_dim"] + \
        g["linear_num_value_heads"] * g["linear_value_head_dim"]
    n += qkv * g["conv"] + g["linear_num_value_heads"] + g["linear_value_head_dim"]
    return n * vector_bytes + g["linear_num_value_heads"] * 4  # A_log: float32 (mlx-lm never casts it)


def is_linear(index: int, interval: int) -> bool:
    return (index + 1) % interval != 0


@dataclass
class SizeEstimate:
    """Predicted bytes, by part: on disk and at the peak of ``mlx_lm.load`` + ``generate``."""

    parts: dict[str, int] = field(default_factory=dict)  # what is stored
    transient: dict[str, int] = field(default_factory=dict)  # what decoding adds

    @property
    def disk(self) -> int:
        return sum(self.parts.values())

    @property
    def peak(self) -> int:
        return self.disk + sum(self.transient.values())

    def line(self) -> str:
        big = max(self.transient, key=self.transient.get) if self.transient else None
        why = f", of which {big} {self.transient[big] / GB:.1f} GB" if big and self.transient[big] > 0.5 * GB else ""
        return (f"will write {self.disk / GB:.1f} GB; unmodified mlx-lm needs about {self.peak / GB:.1f} GB "
                f"to run it ({self.disk / GB:.1f} GB of weights + {(self.peak - self.disk) / GB:.1f} GB while "
                f"decoding{why})")


def base_bytes(text: dict, fmt: BaseFormat) -> int:
    """The base's layers at the combined width, in the base's format."""
    total, interval = 0, _geometry(text)["interval"]
    for i in range(int(text["num_hidden_layers"])):
        lin = is_linear(i, interval)
        total += sum(fmt.matrix(*widened(r, c, side)) for r, c, side in module_shapes(text, lin).values())
        total += _small_tensors(text, lin, DTYPE_BYTES[fmt.dtype])
    return total


def circuit_bytes(text: dict, circuit_layers: int, formats: dict[str, dict[str, int]] | None = None) -> int:
    """The circuit's layers at the combined width of the base ``text``: each module's
    matrices in the formats measured (``CIRCUIT_FORMATS``: counts per format), the
    layers' norms and mixer parameters in float32. A module not measured counts as
    float32 (an upper bound)."""
    formats = CIRCUIT_FORMATS if formats is None else formats
    g, first = _geometry(text), int(text["num_hidden_layers"])
    counts: dict[str, int] = {}
    total = 0
    for j in range(circuit_layers):
        lin = is_linear(first + j, g["interval"])
        for module in module_shapes(text, lin):
            counts[module] = counts.get(module, 0) + 1
        total += _small_tensors(text, lin, 4)
    for module, n in counts.items():
        rows, cols = widened(*module_shapes(text, module not in ("q_proj", "k_proj", "v_proj", "o_proj"))[module])
        measured = formats.get(module) or {"float32": n}
        m = sum(measured.values())
        total += round(sum(k * format_bytes(f, rows, cols) for f, k in measured.items()) * n / m)
    return total


def _copies(text: dict, fmt: BaseFormat, formats: dict[str, dict[str, int]], rows: int) -> dict[str, int]:
    """The float32 copies MLX makes at run time: a dense 16-bit output layer's (the float32
    final state multiplies it at every token) and the largest bfloat16 circuit matrix's."""
    out, W = {}, WIDTH * int(text["hidden_size"])
    if fmt.bits is None and fmt.dtype != "float32":
        out["the output layer's float32 copy"] = rows * W * 4
    shapes = {**module_shapes(text, False), **module_shapes(text, True)}
    dense16 = [shapes[m] for m, f in formats.items() if f.get("bfloat16") and m in shapes]
    if dense16:
        out["a bfloat16 circuit matrix's float32 copy"] = max(r * c * WIDTH * 4 for r, c, _ in dense16)
    return out


def _runtime(text: dict, layers: int, rows: int, prompt_tokens: int) -> dict[str, int]:
    """Caches (recurrent states and conv windows, float32; KV caches in steps of 256
    tokens) and a prompt's activations at the combined width, plus the logits."""
    g = _geometry(text)
    W = WIDTH * g["hidden_size"]
    linear = sum(is_linear(i, g["interval"]) for i in range(layers))
    qkv = 2 * g["linear_num_key_heads"] * g["linear_key_head_dim"] + \
        g["linear_num_value_heads"] * g["linear_value_head_dim"]
    state = g["linear_num_value_heads"] * g["linear_value_head_dim"] * g["linear_key_head_dim"] * 4
    kv = 2 * g["num_key_value_heads"] * g["head_dim"] * 4 * (-(-prompt_tokens // 256) * 256)
    return {"caches": linear * (state + (g["conv"] - 1) * qkv * 4) + (layers - linear) * kv,
            "activations": prompt_tokens * (4 * W + 3 * g["intermediate_size"] + 2 * qkv) * 4 + rows * 8}


def estimate(config: dict, circuit_layers: int = 45, launch_tokens: int = LAUNCH_TOKENS, *,
             prompt_tokens: int = 256, circuit_formats: dict[str, dict[str, int]] | None = None) -> SizeEstimate:
    """The combined checkpoint of the base ``config`` (its config.json) on disk and in
    unmodified mlx-lm decoding after a prompt of ``prompt_tokens``."""
    text = config.get("text_config", config)
    fmt = base_format(config)
    W, rows = WIDTH * int(text["hidden_size"]), int(text["vocab_size"]) + launch_tokens
    formats = CIRCUIT_FORMATS if circuit_formats is None else circuit_formats
    est = SizeEstimate()
    est.parts["base layers"] = base_bytes(text, fmt)
    est.parts["embedding"] = fmt.matrix(rows, W) + fmt.vector(W)
    est.parts["circuit"] = circuit_bytes(text, circuit_layers, formats)
    est.transient.update(_copies(text, fmt, formats, rows))
    est.transient.update(_runtime(text, int(text["num_hidden_layers"]) + circuit_layers, rows, prompt_tokens))
    return est


def stored_format(tensors: dict[str, object], cols: int) -> str:
    """``storage.py``'s name of how one module is stored, read back from its tensors
    (``weight``, and ``scales`` / ``biases`` when quantized) and its input width."""
    w, scales = tensors["weight"], tensors.get("scales")
    if scales is None:
        return str(w.dtype).split(".")[-1]
    bits = w.shape[-1] * 32 // cols
    if tensors.get("biases") is None:
        return f"mxfp{bits}"
    return f"affine{bits}/g{cols // scales.shape[-1]}/{str(scales.dtype).split('.')[-1]}"


def formats_by_module(weights: dict[str, object], first_layer: int, widths: dict[str, int]) -> dict[str, dict]:
    """{module: {format: count}} of the circuit layers (index ``first_layer`` on) of a
    checkpoint's tensors; ``widths``: each module's input width (``module_shapes``)."""
    found: dict[str, dict[str, object]] = {}
    for name, t in weights.items():
        m = re.match(r"^language_model\.model\.layers\.(\d+)\.(.+)\.(\w+)\.(weight|scales|biases)$", name)
        if m and int(m.group(1)) >= first_layer and m.group(3) in widths:
            found.setdefault(f"{m.group(1)}.{m.group(2)}.{m.group(3)}", {})[m.group(4)] = t
    out: dict[str, dict[str, int]] = {}
    for path, tensors in found.items():
        module = path.rsplit(".", 1)[-1]
        fmt = stored_format(tensors, widths[module])
        out.setdefault(module, {})[fmt] = out.get(module, {}).get(fmt, 0) + 1
    return out


def input_widths(text: dict) -> dict[str, int]:
    """Each circuit module's input width at the combined width of the base ``text``."""
    return {m: widened(r, c, side)[1] for lin in (True, False) for m, (r, c, side) in module_shapes(text, lin).items()}
