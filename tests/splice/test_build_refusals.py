"""``build --base`` and ``--model``: refusals name what is wrong, before any weight is read.

(The whole build at a real width writes tens of gigabytes: a benchmark's size. The
splice itself is ``test_splice.py``.)
"""

from __future__ import annotations

import json

from tests.support.cli import cli

from qwengpu_mlx.splice.random_base import qwen_like_config

QWEN35_08B_TEXT = {"hidden_size": 1024, "intermediate_size": 3584, "num_hidden_layers": 24,
                   "linear_num_key_heads": 16, "linear_num_value_heads": 16, "linear_key_head_dim": 128,
                   "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "full_attention_interval": 4}


def _base_dir(tmp_path, text_config: dict, files: list[str]):
    d = tmp_path / "base"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"model_type": "qwen3_5", "text_config": text_config}))
    for f in files:
        (d / f).write_bytes(b"\0" * 16)
    return d


def test_a_base_the_circuit_does_not_fit_is_refused_by_size_before_its_weights(tmp_path):
    d = _base_dir(tmp_path, QWEN35_08B_TEXT, ["model.safetensors"])  # not valid weights: never read
    r = cli("build", "--base", d, "--out", tmp_path / "out")
    assert r.returncode == 2, r.stderr
    assert "MLP width" in r.stderr and "6,144" in r.stderr and "3,584" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "out").exists()


def test_a_pickle_only_base_is_refused_naming_its_files(tmp_path):
    d = _base_dir(tmp_path, qwen_like_config(layers=24), ["pytorch_model.bin"])
    r = cli("build", "--base", d, "--out", tmp_path / "out")
    assert r.returncode == 2, r.stderr
    assert "pytorch_model.bin" in r.stderr and "pickle" in r.stderr


def test_offline_a_repo_missing_from_the_cache_is_named(tmp_path):
    env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HOME": str(tmp_path / "hf")}
    r = cli("build", "--base", "Qwen/Qwen3.5-2B", "--out", tmp_path / "out", env=env)
    assert r.returncode == 2, r.stderr
    assert "Qwen/Qwen3.5-2B" in r.stderr and "HF_HUB_OFFLINE" in r.stderr


def test_run_with_a_model_that_is_neither_a_base_nor_a_combined_checkpoint(tmp_path):
    r = cli("run", "examples/kernels/dot.cu", "--arg", "a=1,2,3", "--arg", "b=4,5,6", "--arg", "out=0",
            "--arg", "n=3", "--backend", "model", "--model", tmp_path)
    assert r.returncode == 2, r.stderr
    assert "has no config.json" in r.stderr and "Traceback" not in r.stderr


def test_run_compile_and_check_with_model_in_a_combined_checkpoint(tmp_path, store):
    """``--model DIR`` end to end on a checkpoint whose base part is real (a random base
    704 wide: 3 x 704 >= the circuit's 2,048 dims) and whose circuit layers are left out:
    our runner rebuilds the circuit from the recorded machine, and reads only the base's
    tensors, so writing the 45 dense circuit layers (gigabytes) proves nothing more here."""
    import mlx.core as mx
    import numpy as np

    from qwengpu_mlx.compiler.sizing import QWEN35_2B
    from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
    from qwengpu_mlx.splice.build import BuildReport, SPLICE_RECORD, splice_record
    from qwengpu_mlx.splice.layout import SpliceLayout
    from qwengpu_mlx.splice.logits import suppression_row
    from qwengpu_mlx.splice.random_base import qwen_like_weights
    from qwengpu_mlx.splice.combined_runner import base_model_from_config
    from qwengpu_mlx.splice.weights import combined_shards

    cfg = qwen_like_config(704, 4, vocab=512)
    base = base_model_from_config(cfg)
    base.load_weights(list(qwen_like_weights(cfg, seed=2, dtype=mx.bfloat16).items()), strict=True)
    plan = store.compiled(PUBLISHED_MACHINE, QWEN35_2B).plan
    lay = SpliceLayout(cfg, plan.config(), len(plan.vocab))
    sup = suppression_row(base, np.random.default_rng(0).integers(0, 512, 64).tolist(), len(plan.vocab))
    from mlx.utils import tree_flatten

    shards = combined_shards(dict(tree_flatten(base.parameters())), plan.weight_shards(), mx.array(sup.row), lay)
    out = tmp_path / "combined"
    out.mkdir()
    for k in range(1 + lay.base_layers):  # the embedding and norms, then the base's layers
        mx.save_safetensors(str(out / f"model-{k:05d}.safetensors"), next(shards))
    (out / SPLICE_RECORD).write_text(json.dumps(splice_record(BuildReport(out, lay, sup, 0, 0, 0.0), "published")))

    args = ["examples/kernels/dot.cu", "--arg", "a=3,1,4,1", "--arg", "b=5,9,2,6", "--arg", "out=2", "--arg", "n=4"]
    r = cli("run", *args, "--backend", "model", "--model", out, "--check", "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["outputs"]["out"] == [2 + 3 * 5 + 1 * 9 + 4 * 2 + 1 * 6] and res["exact"]
    assert min(res["launch_tokens"]) >= lay.launch_id(0)
    prompt = json.loads(cli("compile", *args, "--emit", "tokens", "--model", out).stdout)
    assert min(prompt) >= lay.launch_id(0)
    launch = tmp_path / "launch.json"
    launch.write_text(json.dumps(prompt + res["launch_tokens"]))
    ok = cli("check", *args, "--launch-tokens", launch, "--model", out)
    assert ok.returncode == 0 and ok.stdout.startswith("exact"), ok.stdout + ok.stderr
    launch.write_text(json.dumps(res["launch_tokens"][:-1] + [7]))  # a text token where STOP belongs
    bad = cli("check", *args, "--launch-tokens", launch, "--model", out)
    assert bad.returncode == 2 and "text token" in bad.stderr, bad.stderr
