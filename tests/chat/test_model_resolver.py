"""One ``--model`` for every command: demo, a base directory (both layouts) or a combined checkpoint.

The bases are replicas of ``Qwen/Qwen3.5-2B``'s directory in the two layouts users have:
Hugging Face's (``config.json`` with ``text_config`` and ``vision_config``, sharded
safetensors with an index) and mlx-community's 4-bit conversion (``quantization`` in the
config, one ``model.safetensors``), at 2B's widths with 4 layers. A launch reads only a
base's config (its vocabulary size places the launch tokens; the fit check needs its
widths): the launch runs on the compact circuit, so the weight files here are stand-ins
that are never opened. Expected values: the dot product by hand, the ids as the layout
rule says (base vocabulary first, then the circuit's tokens in order).
"""

from __future__ import annotations

import json

import pytest
from tests.support.cli import cli

from qwengpu_mlx.chat.models import BASE_KIND, COMBINED_KIND, DEMO_KIND, ChatModelError, model_kind, \
    open_launch_model
from qwengpu_mlx.runtime.checkpoint import checkpoint_config
from qwengpu_mlx.core.machine import DEFAULT_MACHINE
from qwengpu_mlx.splice.random_base import qwen_like_config

QWEN35_VOCAB = 248_320
DOT = ["examples/kernels/dot.cu", "--arg", "a=1,2,3", "--arg", "b=4,5,6", "--arg", "out=0", "--arg", "n=3"]
DOT_VALUE = 1 * 4 + 2 * 5 + 3 * 6


def _text_config() -> dict:
    return dict(qwen_like_config(layers=4, vocab=QWEN35_VOCAB), intermediate_size=6144)


def _hf_replica(d):
    """Qwen/Qwen3.5-2B's layout: nested text and vision configs, sharded weights with an index."""
    d.mkdir()
    cfg = checkpoint_config(_text_config())
    cfg["vision_config"] = {"model_type": "qwen3_5", "depth": 24, "hidden_size": 1024}
    (d / "config.json").write_text(json.dumps(cfg))
    shard = "model.safetensors-00001-of-00001.safetensors"
    (d / shard).write_bytes(b"stand-in: launches never open the base's weights")
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"model.language_model.norm.weight":
                                                                               shard}}))
    return d


def _mlx_community_replica(d):
    """mlx-community's 4-bit conversion: the quantization in config.json, one weights file."""
    d.mkdir()
    cfg = checkpoint_config(_text_config())
    cfg["quantization"] = {"group_size": 64, "bits": 4, "mode": "affine"}
    (d / "config.json").write_text(json.dumps(cfg))
    (d / "model.safetensors").write_bytes(b"stand-in")
    return d


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    root = tmp_path_factory.mktemp("replicas")
    return {"hf": _hf_replica(root / "Qwen3.5-2B"), "mlx": _mlx_community_replica(root / "Qwen3.5-2B-4bit")}


def test_the_kinds(tmp_path, replicas):
    (tmp_path / "qwengpu-splice.json").write_text("{}")
    assert model_kind("demo") == DEMO_KIND
    assert model_kind(str(tmp_path)) == COMBINED_KIND
    assert model_kind(str(replicas["hf"])) == model_kind("Qwen/Qwen3.5-2B") == BASE_KIND
    with pytest.raises(ChatModelError, match="no such directory"):
        model_kind(str(tmp_path / "missing"))


@pytest.mark.parametrize("layout", ["hf", "mlx"])
def test_a_base_places_the_launch_tokens_after_its_vocabulary(replicas, store, layout):
    held = open_launch_model(str(replicas[layout]), store, runner=False)
    assert held.machine == DEFAULT_MACHINE and held.runner is None  # none named: the default, whose circuit fits
    assert held.layout.launch_id(0) == QWEN35_VOCAB and held.layout.circuit_id(QWEN35_VOCAB + 5) == 5


def test_a_base_the_circuit_does_not_fit_is_refused(tmp_path, store):
    d = tmp_path / "small"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(checkpoint_config(qwen_like_config(hidden=512, layers=4))))
    (d / "model.safetensors").write_bytes(b"stand-in")
    with pytest.raises(ChatModelError) as e:
        open_launch_model(str(d), store, runner=False)
    assert "512" in str(e.value)


@pytest.mark.parametrize("layout", ["hf", "mlx"])
def test_run_compile_and_check_take_a_base_directory(replicas, layout):
    model = replicas[layout]
    r = cli("run", *DOT, "--backend", "model", "--check", "--json", "--model", model)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["outputs"]["out"] == [DOT_VALUE] and info["exact"]
    assert min(info["launch_tokens"]) >= QWEN35_VOCAB  # ids in the base's vocabulary: after its own
    plain = json.loads(cli("compile", *DOT, "--emit", "tokens").stdout)
    spliced = json.loads(cli("compile", *DOT, "--emit", "tokens", "--model", model).stdout)
    assert spliced == [QWEN35_VOCAB + t for t in plain]
    (model.parent / f"{layout}-launch.json").write_text(r.stdout)
    k = cli("check", *DOT, "--model", model, "--launch-tokens", model.parent / f"{layout}-launch.json")
    assert k.returncode == 0 and k.stdout.startswith("exact:"), k.stdout + k.stderr


def test_run_takes_demo():
    r = cli("run", *DOT, "--backend", "model", "--json", "--model", "demo")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outputs"]["out"] == [DOT_VALUE]
