"""The size model (``qwengpu_mlx/splice/sizes.py``) against measurements.

    .venv/bin/python -m bench.size_model                      # the table: full depth, predicted
    .venv/bin/python -m bench.size_model --circuit            # the circuit alone at 2B's layout, measured
    .venv/bin/python -m bench.size_model --measure --work DIR [--formats 4bit,bf16,8bit] [--layers 4]

``--circuit`` stores the default machine's 45 layers at Qwen3.5-2B's combined width as
``build --base`` does (``splice/storage.py``) and prints each module's formats (the
``CIRCUIT_FORMATS`` table of the model) and the bytes, measured against predicted.

``--measure`` builds reduced-depth combined checkpoints (a random Qwen3.5 base at 2B's
real widths, ``--layers`` base layers, the whole circuit; 4-bit and 8-bit as
``mlx_lm.convert -q`` writes them, group 64) and runs each in a fresh process through
unmodified ``mlx_lm.load`` + ``stream_generate``: peak memory after load, after the
first token and after a steady decode (``mx.get_peak_memory`` and the process's
``ru_maxrss``), greedy text against the base's own, and a dot-product launch against
our runner's tokens, put through ``qwengpu-mlx check``. The bf16 base uses a smaller
vocabulary (its output layer's float32 copy would not fit beside the others' work
here); the model predicts each at the same config.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from qwengpu_mlx.splice.random_base import qwen4b_like_config, qwen_like_config  # noqa: E402
from qwengpu_mlx.splice.sizes import GB, estimate  # noqa: E402

CLI = [sys.executable, "-m", "qwengpu_mlx"]
DOT = ["examples/kernels/dot.cu", "--arg", "a=7,-3,12,5", "--arg", "b=2,9,-4,11", "--arg", "out=1", "--arg", "n=4",
       "--block", "4"]
TEXT = "When in the course of human events it becomes necessary for one people to"
FORMATS = {"bf16": None, "4bit": {"group_size": 64, "bits": 4}, "8bit": {"group_size": 64, "bits": 8}}


def full_config(width: str, fmt: str, layers: int | None = None, vocab: int = 248320, hidden: int = 2048) -> dict:
    """A base config.json as the size model reads it: Qwen3.5-2B's or 4B's, in a format
    (``hidden``: a narrower 2B-like base, still wide enough for the circuit, for a quicker launch)."""
    text = dict(qwen_like_config(hidden, layers=24, vocab=vocab), intermediate_size=6144) if width == "2b" \
        else qwen4b_like_config(layers=32, vocab=vocab)
    if layers:
        text["num_hidden_layers"] = layers
    cfg = {"model_type": "qwen3_5", "text_config": text, "torch_dtype": "bfloat16"}
    if FORMATS[fmt]:
        cfg["quantization"] = dict(FORMATS[fmt])
    return cfg


def print_table() -> None:
    print("predicted at full depth (size model; the circuit's formats as measured by --circuit):")
    print(f"{'model':<10} {'base':<8} {'disk GB':>8} {'peak GB':>8}  parts")
    for width in ("2b", "4b"):
        for fmt in ("4bit", "8bit", "bf16"):
            est = estimate(full_config(width, fmt))
            parts = ", ".join(f"{k} {v / GB:.2f}" for k, v in {**est.parts, **est.transient}.items())
            print(f"Qwen3.5-{width.upper():<4} {fmt:<8} {est.disk / GB:8.2f} {est.peak / GB:8.2f}  {parts}")


def measure_circuit() -> None:
    """The circuit's 45 layers stored at 2B's layout; the formats per module."""
    from collections import Counter

    from qwengpu_mlx.compiler.sizing import QWEN35_2B
    from qwengpu_mlx.core.machine import MACHINES
    from qwengpu_mlx.runtime import CircuitStore
    from qwengpu_mlx.splice.layout import SpliceLayout
    from qwengpu_mlx.splice.sizes import circuit_bytes
    from qwengpu_mlx.splice.storage import StorageTally, exact_storage, is_linear_weight
    from qwengpu_mlx.splice.weights import PREFIX, circuit_dims, circuit_layer, split_layers, wide_columns

    start = time.perf_counter()
    plan = CircuitStore().compiled(MACHINES["default"], QWEN35_2B).plan
    text = full_config("2b", "bf16")["text_config"]
    lay = SpliceLayout(text, plan.config(), len(plan.vocab))
    wide = wide_columns(plan.weight_shards())
    parts = plan.weight_shards()
    dims = circuit_dims(lay, next(parts)[PREFIX + "embed_tokens.weight"], None, wide)
    tally, by_module = StorageTally(), {}
    for j, part in enumerate(parts):
        (params,) = split_layers(part)[1].values()
        for k, w in circuit_layer(params, j, lay, dims).items():
            name = f"{PREFIX}layers.{lay.base_layers + j}.{k}"
            if is_linear_weight(name):
                fmt, stored = exact_storage(name, w)
                tally.add(fmt, w.size, stored)
                by_module.setdefault(k.split(".")[-2], Counter())[fmt] += 1
    print(f"the circuit at 2B's layout in {time.perf_counter() - start:.0f} s; {tally.summary()}")
    measured = sum(tally.nbytes.values())
    print(f"matrices: measured {measured / GB:.3f} GB, predicted "
          f"{circuit_bytes(text, lay.circuit_layers, by_module) / GB:.3f} GB with the small tensors")
    print("CIRCUIT_FORMATS = " + json.dumps({m: dict(c) for m, c in sorted(by_module.items())}, indent=4))


def _base_dir(work: Path, fmt: str, layers: int, vocab: int, hidden: int) -> Path:
    """A random base at 2B's widths in ``fmt``: bf16 written as a standard checkpoint,
    quantized ones by mlx-lm's own ``convert``."""
    from bench.build_real import write_base

    tag = f"{layers}-{vocab}" + ("" if hidden == 2048 else f"-h{hidden}")
    dense = write_base(work / f"base-bf16-{tag}", full_config("2b", "bf16", layers, vocab, hidden)["text_config"])
    if not FORMATS[fmt]:
        return dense
    out = work / f"base-{fmt}-{tag}"
    if not (out / "config.json").is_file():
        from mlx_lm import convert

        convert(str(dense), mlx_path=str(out), quantize=True, q_group_size=FORMATS[fmt]["group_size"],
                q_bits=FORMATS[fmt]["bits"])
        for f in ("tokenizer.json", "tokenizer_config.json"):
            (out / f).write_bytes((dense / f).read_bytes())
    return out


def _disk(d: Path) -> int:
    return sum(f.stat().st_size for f in d.iterdir() if f.suffix == ".safetensors")


def probe(model_dir: str, prompt_file: str, base: bool, text_tokens: int, launch: bool) -> None:
    """(In a fresh process) unmodified mlx-lm on one checkpoint: peaks, text, a launch."""
    import mlx.core as mx
    import mlx_lm
    from mlx_lm.sample_utils import make_sampler

    def rss() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GB

    greedy = make_sampler(temp=0.0)
    start = time.perf_counter()
    model, tok = mlx_lm.load(model_dir)
    out = {"load_s": time.perf_counter() - start, "load_peak": mx.get_peak_memory() / GB, "load_rss": rss()}
    text = []
    for r in mlx_lm.stream_generate(model, tok, tok.encode(TEXT), max_tokens=text_tokens, sampler=greedy):
        text.append(r.token)
        if len(text) == 1:
            out["first_peak"], out["first_rss"] = mx.get_peak_memory() / GB, rss()
    out["text"], out["text_peak"] = text, mx.get_peak_memory() / GB
    if launch and not base:
        prompt = json.loads(Path(prompt_file).read_text())
        launch, t0 = [], time.perf_counter()
        for r in mlx_lm.stream_generate(model, tok, prompt, max_tokens=80, sampler=greedy):
            launch.append(r.token)
        out["launch"], out["launch_tok_s"] = launch, len(launch) / (time.perf_counter() - t0)
        out["launch_text"] = tok.decode(launch)
    out["peak"], out["rss"] = mx.get_peak_memory() / GB, rss()
    print(json.dumps(out))


def _probe(model_dir: Path, prompt_file: Path, ns, base: bool = False) -> dict:
    cmd = [sys.executable, "-m", "bench.size_model", "--probe", str(model_dir), "--prompt-file", str(prompt_file),
           "--text-tokens", str(ns.text_tokens)] + ([] if ns.launch else ["--no-launch"])
    run = subprocess.run(cmd + (["--base"] if base else []), cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def _ours(comb: Path) -> tuple[list[int], Path]:
    """Our runner's launch tokens for the dot product, and its prompt in the combined vocabulary."""
    prompt = comb / "dot-prompt.json"
    got = subprocess.run(CLI + ["compile", *DOT, "--emit", "tokens", "--model", str(comb)], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    prompt.write_text(got.stdout)
    ran = subprocess.run(CLI + ["run", *DOT, "--model", str(comb), "--json"], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    return json.loads(ran.stdout)["launch_tokens"], prompt


def measure(work: Path, fmt: str, ns, vocab: int) -> None:
    from qwengpu_mlx.splice.pipeline import build_from_base

    base = _base_dir(work, fmt, ns.layers, vocab, ns.hidden)
    comb = work / base.name.replace("base-", "combined-")
    if not (comb / "config.json").is_file():
        start = time.perf_counter()
        report = build_from_base(str(base), comb, "default", log=lambda s: print("  " + s, flush=True))
        print(f"  build {time.perf_counter() - start:.0f} s; {report.storage.summary()}", flush=True)
    ours, prompt = _ours(comb)
    got, want = _probe(comb, prompt, ns), _probe(base, prompt, ns, base=True)
    est = estimate(json.loads((base / "config.json").read_text()), prompt_tokens=len(json.loads(prompt.read_text())))
    print(f"{fmt} base, {ns.layers} layers, hidden {ns.hidden}, vocab {vocab}: disk {_disk(comb) / GB:.2f} GB "
          f"(predicted {est.disk / GB:.2f}); peak after load {got['load_peak']:.2f}, first token "
          f"{got['first_peak']:.2f}, at the end {got['peak']:.2f} GB (predicted {est.peak / GB:.2f}); ru_maxrss "
          f"{got['rss']:.2f} GB; the base alone {want['peak']:.2f} GB; text "
          f"{'identical' if got['text'] == want['text'] else 'DIFFERENT'} ({len(got['text'])} tokens)", flush=True)
    if "launch" in got:
        _report_launch(comb, got, ours)


def _report_launch(comb: Path, got: dict, ours: list[int]) -> None:
    """mlx-lm's launch against our runner's, and ``qwengpu-mlx check`` on it."""
    launch = comb / "mlx-lm-launch.json"
    launch.write_text(json.dumps(got["launch"]))
    check = subprocess.run(CLI + ["check", *DOT, "--launch-tokens", str(launch), "--model", str(comb)], cwd=ROOT,
                           capture_output=True, text=True)
    print(f"  launch: {len(got['launch'])} tokens, "
          f"{'identical to our runner' if got['launch'] == ours else 'DIFFERENT from our runner'}, "
          f"{got['launch_tok_s']:.3f} tokens/s; check: {(check.stdout or check.stderr).strip().splitlines()[-1]}")
    print(f"  mlx-lm wrote: {got['launch_text']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--circuit", action="store_true")
    ap.add_argument("--measure", action="store_true")
    ap.add_argument("--work", type=Path)
    ap.add_argument("--formats", default="4bit,bf16")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=248320, help="the quantized bases' vocabulary")
    ap.add_argument("--vocab-bf16", type=int, default=32768)
    ap.add_argument("--hidden", type=int, default=2048, help="a narrower base (>= 704) for a quicker launch")
    ap.add_argument("--text-tokens", type=int, default=16)
    ap.add_argument("--no-launch", dest="launch", action="store_false", help="peaks and text only")
    ap.add_argument("--probe")
    ap.add_argument("--prompt-file")
    ap.add_argument("--base", action="store_true")
    ns = ap.parse_args()
    if ns.probe:
        probe(ns.probe, ns.prompt_file, ns.base, ns.text_tokens, ns.launch)
    elif ns.circuit:
        measure_circuit()
    elif ns.measure:
        for fmt in ns.formats.split(","):
            measure(ns.work, fmt, ns, ns.vocab_bf16 if fmt == "bf16" else ns.vocab)
    else:
        print_table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
