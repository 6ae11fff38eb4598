"""What the launch loop reads of a token's logits, taken on the native step's shortcuts.

The loop keeps the greedy token and its margin over the runner-up (``native_step.top_two``,
NumPy's argmax and max); the native step gives that pair in one pass over the logits, and
runs a prompt's tokens before the last without logits (no one reads them). Expected
values: NumPy's own argmax/max over the same floats, and the same tokens fed one at a
time with every token's logits.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, LARGE_MACHINE
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner
from qwengpu_mlx.runtime.native_step import top_two
from qwengpu_mlx.runtime.prompt import prompt_tokens
from tests.support.launching import bound_program, on_runner

KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"


def _numpy_pair(logits: np.ndarray) -> tuple[int, float]:
    """The oracle: argmax, then the largest of the rest, in float32."""
    lg = np.asarray(logits, np.float32)
    tok = int(np.argmax(lg))
    rest = np.delete(lg, tok)
    return tok, float(lg[tok] - (rest.max() if rest.size else np.float32(-np.inf)))


def _cases() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    cases = [np.array(v, np.float32) for v in ([1.0], [3.0, 3.0], [2, 5, 5, 1], [-np.inf, -1.0], [7.0] + [-np.inf] * 9,
                                               [1, 2, 3, 4, 5, 6, 7, 8, 9], [9, 8, 7, 6, 5, 4, 3, 2, 1, 9])]
    for n in (7, 8, 9, 17, 10_414, 36_988):
        for _ in range(5):
            a = rng.standard_normal(n).astype(np.float32)
            cases += [a, np.round(a * 2).astype(np.float32)]  # many ties among the rounded ones
    return cases


def test_the_native_pair_is_numpys(module):
    for lg in _cases():
        tok, margin = module.top_two(lg)
        assert (tok, margin) == _numpy_pair(lg), lg[:10]
        assert top_two(lg) == _numpy_pair(lg)


def _lane_cases() -> list[np.ndarray]:
    """Ties the native pass's sixteen lanes split: the largest value held in two lanes (the
    later lane first in the array, or the same lane twice), in the tail after the last
    sixteen, a -inf everywhere but one place, and signed zeros as the largest."""
    cases = []
    for n in (16, 33, 40, 100):
        for first, then in ((21 % n, 6), (20 % n, 4), (4, 20 % n), (3, 19 % n), (n - 1, 0), (0, n - 1), (n - 2, n - 1)):
            a = np.arange(n, dtype=np.float32) % 7
            a[first] = a[then] = 50.0
            cases.append(a)
            b = np.full(n, -np.inf, np.float32)
            b[first] = 1.0
            cases.append(b)
            z = np.full(n, -1.0, np.float32)
            z[first], z[then] = -0.0, 0.0
            cases.append(z)
    return cases


def test_ties_across_lanes_are_numpys(module):
    for lg in _lane_cases():
        tok, margin = module.top_two(lg)
        want = _numpy_pair(lg)
        assert tok == want[0] and margin == want[1], lg


def test_a_nan_takes_numpys_path(module, store):
    from qwengpu_mlx.runtime.native_step import NativeStep

    lg = np.array([1.0, np.nan, 3.0], np.float32)
    assert module.top_two(lg)[0] == -1  # the native pass declines
    step = NativeStep.__new__(NativeStep)
    step.module = module
    tok, margin = step.top_two(lg)
    assert tok == int(np.argmax(lg)) == 1 and np.isnan(margin)


@pytest.mark.parametrize("machine,name", [(PUBLISHED_MACHINE, "shfl_broadcast"), (LARGE_MACHINE, "dot")])
def test_a_launch_reads_the_same_tokens_and_margins(store, module, machine, name):
    """The packed runner's ``step_top_two`` against its own logits read by NumPy: the same
    greedy token and margin at every position of a launch."""
    runner = store.runner(machine)
    assert hasattr(runner, "step_top_two")
    spec = json.loads((KERNELS / f"{name}.json").read_text())
    prog = bound_program(KERNELS / f"{name}.cu", spec["kernel"], args=spec["args"], block=spec["block"],
                         grid=spec["grid"], machine=machine)
    launch = on_runner(prog, runner)
    fed = [prompt_tokens(prog, machine)] + [[t] for t in launch.tokens[:-1]]
    margins = []
    runner.reset()
    for tokens, want in zip(fed, launch.tokens):
        lg = np.array(runner.step(tokens))
        assert _numpy_pair(lg)[0] == want
        margins.append(_numpy_pair(lg)[1])
    assert launch.logit_margin == min(margins)


def test_a_prompt_without_its_logits_leaves_the_same_states(store, module):
    """A prompt fed at once (its tokens before the last without logits) against the same
    tokens fed one by one, each with its logits: the same last logits, margins and states."""
    machine = LARGE_MACHINE
    cc = store.compact(machine)
    at_once, one_by_one = (CircuitRunner(cc, machine, native=module) for _ in range(2))
    spec = json.loads((KERNELS / "dot.json").read_text())
    prog = bound_program(KERNELS / "dot.cu", spec["kernel"], args=spec["args"], block=spec["block"],
                         grid=spec["grid"], machine=machine)
    prompt = prompt_tokens(prog, machine)
    for r in (at_once, one_by_one):
        r.reset()
        r.track_margins = True
    want = [one_by_one.step([t]) for t in prompt][-1]
    got = at_once.step(prompt)
    assert np.array_equal(np.array(got).view(np.uint32), np.array(want).view(np.uint32))
    assert at_once.min_margin == one_by_one.min_margin
    for a, b in zip(at_once._packed, one_by_one._packed):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))
