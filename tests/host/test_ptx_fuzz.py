"""A seeded PTX fuzzer: malformed PTX is always the project's own error, never a crash.

The conformance kernels' PTX (compiled once per session and kept in pytest's cache)
is mutated a few thousand times: tokens and lines deleted, duplicated and swapped,
numbers, opcodes and operands changed. Each mutant goes through parse, validate,
lower, bind and the reference interpreter (a small step budget, a time limit per
input). Any exception that is not a :class:`QwenGpuError` is a crash, any input over
the time limit a hang. A few accepted mutants also run through the model backend,
checked record by record against the reference: the two backends must agree.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import signal
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from qwengpu_mlx.core.errors import ExecutionError, QwenGpuError
from qwengpu_mlx.host.frontend import cuda_to_ptx, select_kernel
from qwengpu_mlx.host.launch import CompiledKernel, bind
from qwengpu_mlx.host.ptx_parser import parse_ptx
from qwengpu_mlx.core.reference import run_program
from qwengpu_mlx.host.signature import KernelParam, ptx_param_name
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE

from tests.support.cli import needs_clang

KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"
SEEDS = ["dot", "histogram", "shfl_down_reduce", "reduce_shared_tree", "early_return_barrier", "collatz_steps",
         "atomic_compact", "grid_stride", "nested_branches", "warp_ballot", "stencil_1d", "shared_transpose",
         "div_pow2_signed", "predication"]
SEED = 15
INPUTS = 2500
STEP_BUDGET = 64
TIME_LIMIT_S = 5.0  # per input; everything here takes milliseconds
MODEL_SAMPLE = 2
MODEL_MAX_STEPS = 3

OPCODES = ["add.s32", "sub.s32", "mul.lo.s32", "mad.lo.s32", "max.u32", "min.s32", "and.b32", "or.b32",
           "xor.b32", "not.b32", "shl.b32", "shr.s32", "neg.s32", "abs.s32", "mov.u32", "mov.b64", "ld.global.u32",
           "st.global.u32", "ld.shared.u32", "st.shared.u32", "atom.global.add.u32", "setp.lt.s32", "setp.ne.b16",
           "selp.b32", "bra.uni", "bra", "ret", "bar.sync", "cvt.s64.s32", "cvta.to.global.u64",
           "mul.wide.s32", "shfl.sync.down.b32", "ld.param.u64", "ld.global.s8", "and.pred", "div.s32", "call"]
OPERANDS = ["%r1", "%r2", "%r99", "%rd1", "%rd3", "%p1", "%p7", "%rs1", "%tid.x", "%ctaid.x", "%laneid", "%clock",
            "0", "1", "-1", "4", "2147483648", "4294967296", "99999999999999", "[%rd1]", "[%rd2+4]", "[%r1+-8]",
            "[8]", "[%p1]", "$L__BB0_1", "$L__BB0_99", "_", "%r1|%p1", "nosuchsym"]
NUMBERS = [0, 1, -1, 2, 3, 4, 31, 32, 127, 255, 1 << 30, (1 << 31) - 1, 1 << 31, 1 << 32, -(1 << 31), 99999999999999]

_TOKEN = re.compile(r"\s+|[,;\[\]{}()]|[^\s,;\[\]{}()]+")


@dataclass
class Counts:
    inputs: int = 0
    accepted: int = 0  # lowered and ran (to the end, or to a fault the program asked for)
    clean_errors: int = 0  # a QwenGpuError before or while running
    crashes: list = field(default_factory=list)
    hangs: list = field(default_factory=list)
    errors_by_class: dict = field(default_factory=dict)


# --------------------------------------------------------------------------- the corpus


@pytest.fixture(scope="session")
def seed_ptx(request) -> dict[str, tuple[str, dict]]:
    """name -> (PTX, launch spec) of the seed kernels; PTX cached by the source's hash."""
    cache = request.config.cache
    out = {}
    for name in SEEDS:
        src = KERNELS / f"{name}.cu"
        key = "qwengpu-fuzz/" + hashlib.sha256(src.read_bytes()).hexdigest()[:16]
        ptx = cache.get(key, None)
        if ptx is None:
            ptx = cuda_to_ptx(src)
            cache.set(key, ptx)
        out[name] = (ptx, json.loads((KERNELS / f"{name}.json").read_text()))
    return out


# --------------------------------------------------------------------------- mutations


def _body_lines(lines: list[str]) -> list[int]:
    """Indices of the lines inside kernel bodies (where mutations matter most)."""
    inside, out = False, []
    for i, line in enumerate(lines):
        if line.strip() == "{":
            inside = True
        elif line.strip() == "}":
            inside = False
        elif inside and line.strip():
            out.append(i)
    return out or list(range(len(lines)))


def _mutate_tokens(rng: random.Random, line: str) -> str:
    toks = [t for t in _TOKEN.findall(line)]
    words = [i for i, t in enumerate(toks) if not t.isspace()]
    if not words:
        return line
    i = rng.choice(words)
    kind = rng.randrange(6)
    if kind == 0:
        del toks[i]
    elif kind == 1:
        toks.insert(i, toks[i] + (" " if rng.random() < 0.5 else ""))
    elif kind == 2:
        j = rng.choice(words)
        toks[i], toks[j] = toks[j], toks[i]
    elif kind == 3:
        toks[i] = rng.choice(OPERANDS)
    elif kind == 4:
        toks[i] = rng.choice(OPCODES)
    else:
        nums = [k for k in words if re.fullmatch(r"-?\d+", toks[k])]
        k = rng.choice(nums) if nums else i
        toks[k] = str(rng.choice(NUMBERS) if rng.random() < 0.7 else rng.randint(-600, 600))
    return "".join(toks)


def mutate(rng: random.Random, text: str) -> str:
    """One to three random edits of ``text``: tokens or whole lines."""
    lines = text.split("\n")
    body = _body_lines(lines)
    for _ in range(rng.randint(1, 3)):
        i = rng.choice(body) if body else 0
        kind = rng.randrange(10)
        if kind == 0 and len(lines) > 1:
            lines[i] = ""
        elif kind == 1:
            lines.insert(i, lines[i])
        elif kind == 2:
            j = rng.choice(body)
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines[i] = _mutate_tokens(rng, lines[i])
    return "\n".join(lines)


# --------------------------------------------------------------------------- one input


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _args(params: list[KernelParam], spec: dict) -> dict:
    """The seed launch's arguments by position; a parameter the seed lacks gets a zero."""
    values = list(spec["args"].values())
    return {p.name: (values[i] if i < len(values) else ([0] if p.pointer else 0)) for i, p in enumerate(params)}


def lower_and_run(text: str, spec: dict):
    """Parse, validate, lower and bind ``text``, run it on the reference: (program, result or error)."""
    module = parse_ptx(text)
    kernel = select_kernel(module, None)
    params = [KernelParam(ptx_param_name(p.name), p.type in ("u64", "b64", "s64"), p.type) for p in kernel.params]
    ck = CompiledKernel(None, text, module, kernel, params)
    program = bind(ck, _args(params, spec), block=spec["block"], grid=spec["grid"], machine=PUBLISHED_MACHINE)
    try:
        return program, run_program(program, PUBLISHED_MACHINE, step_budget=STEP_BUDGET, trace=False)
    except ExecutionError as e:  # a fault the program asked for: accepted, it ran as written
        return program, e


def fuzz(seed_ptx: dict, n: int, seed: int = SEED) -> tuple[Counts, list]:
    """Run ``n`` mutants; returns the counts and the accepted (text, spec, program) triples."""
    rng = random.Random(seed)
    counts, accepted = Counts(), []
    names = sorted(seed_ptx)
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for k in range(n):
            name = names[k % len(names)]
            ptx, spec = seed_ptx[name]
            text = ptx if k < len(names) else mutate(rng, ptx)
            counts.inputs += 1
            start = time.monotonic()
            signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT_S)
            try:
                program, _ = lower_and_run(text, spec)
                counts.accepted += 1
                accepted.append((text, spec, program, name))
            except QwenGpuError as e:
                counts.clean_errors += 1
                counts.errors_by_class[type(e).__name__] = counts.errors_by_class.get(type(e).__name__, 0) + 1
            except _Timeout:
                counts.hangs.append((name, time.monotonic() - start, text))
            except Exception:  # noqa: BLE001 - exactly what the fuzzer looks for
                counts.crashes.append((name, traceback.format_exc(limit=4), text))
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, old)
    return counts, accepted


# --------------------------------------------------------------------------- tests


def _diff(a: str, b: str) -> str:
    la, lb = a.split("\n"), b.split("\n")
    return "\n".join(f"- {x}\n+ {y}" for x, y in zip(la, lb) if x != y)[:800]


@pytest.fixture(scope="session")
def fuzz_run(seed_ptx):
    start = time.monotonic()
    counts, accepted = fuzz(seed_ptx, INPUTS)
    return counts, accepted, time.monotonic() - start


@needs_clang
def test_mutated_ptx_never_crashes_or_hangs(fuzz_run, seed_ptx):
    counts, accepted, seconds = fuzz_run
    print(f"\nPTX fuzz: {counts.inputs} inputs, {counts.accepted} accepted, {counts.clean_errors} clean errors "
          f"{dict(sorted(counts.errors_by_class.items()))}, {len(counts.crashes)} crashes, "
          f"{len(counts.hangs)} hangs, {seconds:.1f} s")
    report = []
    for name, tb, text in counts.crashes[:3]:
        report.append(f"crash on a mutant of {name}:\n{_diff(seed_ptx[name][0], text)}\n{tb}")
    for name, secs, text in counts.hangs[:3]:
        report.append(f"hang ({secs:.1f} s) on a mutant of {name}:\n{_diff(seed_ptx[name][0], text)}")
    assert not counts.crashes and not counts.hangs, "\n\n".join(report)
    assert counts.inputs == INPUTS
    # the fuzzer reaches every stage: some mutants run, most are refused cleanly
    assert counts.accepted >= len(SEEDS) and counts.clean_errors > INPUTS // 4
    assert counts.errors_by_class.get("InvalidPtx", 0) > 0


@needs_clang
def test_fuzz_is_deterministic(seed_ptx):
    a, _ = fuzz(seed_ptx, 60, seed=7)
    b, _ = fuzz(seed_ptx, 60, seed=7)
    assert (a.accepted, a.clean_errors, a.errors_by_class) == (b.accepted, b.clean_errors, b.errors_by_class)


@needs_clang
def test_accepted_mutants_agree_on_both_backends(fuzz_run, seed_ptx, store):
    """A sample of accepted mutants that changed the program: the model's launch is the reference's."""
    from tests.support.launching import on_runner

    _, accepted, _ = fuzz_run
    rng = random.Random(SEED)
    def reference(program):
        try:
            return run_program(program, PUBLISHED_MACHINE, step_budget=STEP_BUDGET, trace=False)
        except ExecutionError as e:
            return e

    def short(a) -> bool:  # a model launch costs seconds per step on a small CPU
        ref = reference(a[2])
        steps = ref.steps if not isinstance(ref, Exception) else getattr(ref, "result").steps
        return a[0] != seed_ptx[a[3]][0] and a[2].grid_dim == 1 and steps <= MODEL_MAX_STEPS

    changed = [a for a in accepted if short(a)]
    assert len(changed) >= MODEL_SAMPLE
    runner = store.runner(PUBLISHED_MACHINE)
    for text, spec, program, name in rng.sample(changed, MODEL_SAMPLE):
        ref = reference(program)
        try:
            launch = on_runner(program, runner, step_budget=STEP_BUDGET, check=True)
        except ExecutionError as e:  # the model stopped it: so must the reference, the same way
            assert isinstance(ref, ExecutionError) and type(e) is type(ref), (name, e, ref, _diff(seed_ptx[name][0], text))
            continue
        assert not isinstance(ref, Exception), (name, ref)
        assert launch.check.exact, (name, launch.check.problems, _diff(seed_ptx[name][0], text))
        assert launch.memory[: len(ref.memory)] == ref.memory[: len(launch.memory)]
