"""The command line as a newcomer meets it: launch files, the missing-argument
hint, --version and ``python -m``, help with examples, refusals, Ctrl-C, closed pipes,
the cache commands and mlx-lm's summary lines.

Expected values come from the kernels' arithmetic and the definitions of the figures,
worked out by hand here; the CLI runs in-process (``main``) unless the point is the
process itself (exit on a signal, a closed pipe, ``python -m``)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from tests.support.cli import REPO, cu, needs_clang
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, machine_name
from qwengpu_mlx.runtime import circuit_cache as cache
from qwengpu_mlx.cli.main import build_parser, main
from qwengpu_mlx.cli.peak_memory import PeakMemory

INC = """\
__global__ void inc(int *a, int n) {
  int i = threadIdx.x;
  if (i < n) a[i] = a[i] + n;
}
"""

SPIN = """\
__global__ void spin(unsigned *out, int n) {
  unsigned x = 1;
  for (int i = 0; i < n; i++) { x ^= x << 13; x ^= x >> 17; x ^= x << 5; }
  out[0] = x;
}
"""


def _main(capsys, *argv) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    got = capsys.readouterr()
    return rc, got.out, got.err


def _spec(path: Path, **spec) -> Path:
    path.write_text(json.dumps(spec))
    return path


# -- where a launch's arguments come from


@needs_clang
def test_run_reads_the_json_beside_the_kernel(tmp_path, capsys):
    k = cu(tmp_path, INC, "inc.cu")
    _spec(tmp_path / "inc.json", block=4, args={"a": [10, 20, 30, 40], "n": 3})
    rc, out, err = _main(capsys, "run", k, "--backend", "reference")
    assert rc == 0, err
    assert "(block 4, grid 1," in out and "  a = [13, 23, 33, 40]" in out  # a[i] + n for i < 3


@needs_clang
def test_args_file_and_arg_overrides(tmp_path, capsys):
    k = cu(tmp_path, INC, "inc.cu")
    _spec(tmp_path / "inc.json", args={"a": [0, 0], "n": 2})  # not read: --args names another file
    other = _spec(tmp_path / "launch.json", block=2, args={"a": [5, 6, 7], "n": 1})
    rc, out, err = _main(capsys, "run", k, "--backend", "reference", "--args", other, "--arg", "n=2")
    assert rc == 0, err
    assert "(block 2, grid 1," in out and "  a = [7, 8, 7]" in out  # n=2 from --arg, 2 threads


@needs_clang
def test_explicit_args_do_not_merge_with_the_json_beside(tmp_path, capsys):
    k = cu(tmp_path, INC, "inc.cu")
    _spec(tmp_path / "inc.json", block=8, args={"a": [0], "n": 1})
    rc, out, _ = _main(capsys, "run", k, "--backend", "reference", "--arg", "a=1,1", "--arg", "n=2")
    assert rc == 0 and "(block 4," in out and "  a = [3, 3]" in out  # the launch typed, default block


@needs_clang
def test_missing_arg_shows_the_syntax(tmp_path, capsys):
    k = cu(tmp_path, INC, "inc.cu")
    rc, out, err = _main(capsys, "run", k, "--backend", "reference")
    assert rc == 2 and out == ""
    assert err == ("error: kernel `inc` takes parameters (a, n); missing --arg for a, n; "
                   "e.g. --arg a=1,2,3 --arg n=3 (or put them in inc.json)\n")


def test_a_malformed_launch_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "launch.json"
    bad.write_text('{"args": {"a": "one"}}')
    rc, _, err = _main(capsys, "run", REPO / "examples/kernels/dot.cu", "--args", bad)
    assert rc == 2 and err == (f"error: {bad}: args.a must be a number or a list of numbers (a float "
                               f"parameter's may be \"nan\", \"inf\" or \"-inf\")\n")


# -- version, python -m, help, refusals


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out == f"qwengpu-mlx {version('qwengpu-mlx')}\n"


def test_python_dash_m_runs_the_cli():
    r = subprocess.run([sys.executable, "-m", "qwengpu_mlx", "--version"], capture_output=True, text=True,
                       cwd=REPO, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("qwengpu-mlx ") and r.stderr == ""


def test_help_has_examples_and_no_backticks(capsys):
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name in ["", *sub.choices]:
        with pytest.raises(SystemExit):
            main([name, "--help"] if name else ["--help"])
        text = capsys.readouterr().out
        assert "examples:\n  qwengpu-mlx " in text, name
        if name not in ("chat", "tui"):  # (those two parsers are their modules' own)
            assert "`" not in text, name


def test_check_with_the_reference_backend_is_refused(capsys):
    rc, out, err = _main(capsys, "run", REPO / "examples/kernels/dot.cu", "--backend", "reference", "--check")
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: --check") and "nothing to check" in err


def test_machine_prints_one_limit_a_line(capsys):
    rc, out, _ = _main(capsys, "machine", "--machine", "published")
    lines = out.splitlines()
    assert rc == 0 and lines[0] == "machine published:" and len(lines) >= 6
    assert all(len(line) <= 80 for line in lines)
    assert re.search(r"^  warpSize +32 lanes to a kernel", out, re.M)  # the README's table: 32, 126 words
    assert re.search(r"^  machine warps +4 lanes each, up to 4 a block \(blockDim.x <= 16\)", out, re.M)
    assert re.search(r"^  memory +126 words of 32 bits", out, re.M)


def test_machine_without_a_name_prints_the_default_machine(capsys):
    """``machine`` alone describes whichever machine is the default, by its own name."""
    rc, out, _ = _main(capsys, "machine")
    assert rc == 0 and out.splitlines()[0] == f"machine {machine_name(DEFAULT_MACHINE)} (the default):"
    assert re.search(rf"^  memory +{DEFAULT_MACHINE.mem_words} words of 32 bits", out, re.M)
    assert re.search(rf"^  program ROM +{DEFAULT_MACHINE.rom_blocks} blocks", out, re.M)
    assert re.search(rf"blockDim.x <= {DEFAULT_MACHINE.max_block_dim}\)", out)


def test_build_defaults_to_the_shape_it_can_write():
    from qwengpu_mlx.cli.build import build_shape

    parse = build_parser().parse_args
    assert build_shape(parse(["build", "--out", "x"])) == "qwen3.5-2b"  # narrow: 0.6 TB, over --max-params
    assert build_shape(parse(["build", "--out", "x", "--shape", "narrow"])) == "narrow"
    assert parse(["build", "--out", "x", "--base", "b"]).shape is None  # --base takes the base's shape


# -- the process: Ctrl-C and a closed pipe


def test_a_closed_stdout_pipe_exits_quietly():
    p = subprocess.Popen([sys.executable, "-m", "qwengpu_mlx", "machine"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=REPO)
    p.stdout.close()  # the reader is gone before the first write (as `| head -0`)
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 0 and err == ""


@needs_clang
def test_ctrl_c_exits_130_with_one_line(tmp_path):
    k = cu(tmp_path, SPIN, "spin.cu")
    p = subprocess.Popen([sys.executable, "-m", "qwengpu_mlx", "run", str(k), "--backend", "reference",
                          "--trace", "--step-budget", "100000000", "--arg", "out=0", "--arg", "n=100000000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                         # as from a terminal: a suite started in the background inherits SIGINT ignored
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert p.stdout.readline()  # the launch is running (a first trace line)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 130 and err == "interrupted\n"


# -- the cache


def _fake_entry(d: Path, key: str, variant: str | None, size: int, used: float) -> None:
    w, m = d / f"circuit-{key[:16]}.safetensors", d / f"circuit-{key[:16]}.json"
    w.write_bytes(b"\0" * size)
    m.write_text(json.dumps({"format": cache.FORMAT, "key": key, "variant": variant}))
    os.utime(m, (used, used))


def test_cache_info_and_clear(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("QWENGPU_MLX_CACHE", str(tmp_path))
    now = time.time()
    _fake_entry(tmp_path, "a" * 64, "v1", 1_000_000, now - 100)
    _fake_entry(tmp_path, "b" * 64, "v2", 2_000_000, now)
    (tmp_path / ".circuit-x.tmp.safetensors").write_bytes(b"\0" * 500_000)  # a killed write's leftover
    rc, out, _ = _main(capsys, "cache", "info")
    lines = out.splitlines()
    assert rc == 0 and lines[0] == f"cache: {tmp_path} ($QWENGPU_MLX_CACHE)"
    manifests = sum(len((tmp_path / f"circuit-{c * 16}.json").read_bytes()) for c in "ab")
    assert lines[1].startswith(f"2 entries, {(3_500_000 + manifests) / 1e6:.1f} MB;")
    assert lines[2].split()[0] == "circuit-" + "b" * 16 + ".safetensors"  # most recently used first
    assert lines[3].split()[0] == "circuit-" + "a" * 16 + ".safetensors"
    assert "1 leftover files" in lines[4]
    rc, out, _ = _main(capsys, "cache", "clear")
    assert rc == 0 and out.startswith(f"cleared {tmp_path}: 5 files, ") and list(tmp_path.iterdir()) == []


def test_prune_drops_other_compiler_versions_then_the_least_recently_used(tmp_path):
    now = time.time()
    _fake_entry(tmp_path, "0" * 64, "mine", 10, now - 500)  # the same circuit, an older compiler
    _fake_entry(tmp_path, "1" * 64, "mine", 10, now - 900)  # the one just saved (kept, however old)
    for i, age in enumerate([50, 10, 30, 40]):  # other circuits
        _fake_entry(tmp_path, f"{i + 2}" * 64, f"other{i}", 10, now - age)
    removed = cache.prune(tmp_path, keep="1" * 64, variant="mine", limit=3)
    assert sorted(e.key[0] for e in removed) == ["0", "2", "5"]  # 2 and 5: the two oldest others
    assert sorted(e.key[0] for e in cache.entries(tmp_path)) == ["1", "3", "4"]


def test_a_new_entry_replaces_its_older_compiler_version(tmp_path):
    from dataclasses import dataclass

    from qwengpu_mlx.compiler.levels import DEFAULT_LEVELS
    from qwengpu_mlx.compiler.machine_circuit import NARROW

    @dataclass
    class Tiny:
        w: np.ndarray

    variant = cache.variant_key(DEFAULT_MACHINE, NARROW, DEFAULT_LEVELS)
    cache.save(Tiny(np.arange(3.0)), "e" * 64, tmp_path, variant)  # as an older compiler wrote it
    cache.cached_compact(DEFAULT_MACHINE, lambda: Tiny(np.ones(2)), directory=tmp_path, log=print)
    key = cache.circuit_key(DEFAULT_MACHINE, NARROW, DEFAULT_LEVELS)
    assert [e.key for e in cache.entries(tmp_path)] == [key]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"circuit-{key[:16]}.json",
                                                          f"circuit-{key[:16]}.safetensors"]


# -- mlx-lm's summary lines and the JSON split


def _launch(prompt: int, prefill: float, tokens: int, generate: float):
    return SimpleNamespace(prompt=[0] * prompt, tokens=[1] * tokens, prefill_seconds=prefill,
                           generate_seconds=generate, tokens_per_s=tokens / generate, outputs={"out": [32]},
                           steps=5)


def test_summary_lines_are_mlx_lms():
    from qwengpu_mlx.cli.run import summary_lines

    lines = summary_lines(_launch(90, 4.5, 40, 8.0), PeakMemory(0.4126, 0.0))
    assert lines == ["==========", "Prompt: 90 tokens, 20.000 tokens-per-sec",
                     "Generation: 40 tokens, 5.000 tokens-per-sec",
                     "Peak memory: 0.413 GB resident (the process); MLX's arrays: 0.000 GB"]


def test_run_json_keeps_its_keys_and_adds_the_split():
    from qwengpu_mlx.cli.run import model_record

    prog = SimpleNamespace(kernel="dot", arrays=[])  # no float* array: outputs stay integers
    rec = model_record(SimpleNamespace(check=False), prog, _launch(90, 4.5, 40, 8.0), None, PeakMemory(0.4126, 0.1874))
    assert rec == {"kernel": "dot", "backend": "model", "outputs": {"out": [32]}, "steps": 5, "tokens": 40,
                   "launch_tokens": [1] * 40, "tokens_per_s": 5.0, "prompt_tokens": 90, "prompt_tps": 20.0,
                   "generation_tokens": 40, "generation_tps": 5.0, "peak_resident_gb": 0.413, "peak_mlx_gb": 0.187}


# -- progress on stderr


class _Tty:
    def isatty(self):
        return True


def test_progress_shows_on_a_terminal_and_not_with_json_or_trace():
    from qwengpu_mlx.cli.progress import wanted

    ns = lambda **kw: SimpleNamespace(**{"json": False, "progress": False, "trace": False, **kw})  # noqa: E731
    assert wanted(ns(), _Tty()) and not wanted(ns(), SimpleNamespace(isatty=lambda: False))
    assert not wanted(ns(json=True), _Tty()) and wanted(ns(json=True, progress=True), _Tty())
    assert not wanted(ns(trace=True), _Tty())  # the trace is its own progress


def test_progress_counts_the_launch_tokens():
    import io

    from rich.console import Console

    from qwengpu_mlx.cli.progress import Display

    buf, heard = io.StringIO(), []
    with Display(Console(file=buf, force_terminal=True, width=100), trace=lambda i, t: heard.append(i)) as d:
        d.phase("prefill: 9 prompt tokens")
        for i in range(3):
            d.token(i, None)
    assert d.tokens == 3 and heard == [0, 1, 2] and "3 tokens" in buf.getvalue()
