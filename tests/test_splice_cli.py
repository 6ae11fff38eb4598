"""``build --base`` and ``--model``: refusals name what is wrong, before any weight is read.

(The whole build at a real width writes tens of gigabytes: a benchmark's size. The
splice itself is ``test_splice.py``.)
"""

from __future__ import annotations

import json

from clitools import cli

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


def test_run_with_a_model_that_is_not_a_combined_checkpoint(tmp_path):
    r = cli("run", "examples/kernels/dot.cu", "--arg", "a=1,2,3", "--arg", "b=4,5,6", "--arg", "out=0",
            "--arg", "n=3", "--backend", "model", "--model", tmp_path)
    assert r.returncode == 2, r.stderr
    assert "not a combined checkpoint" in r.stderr
