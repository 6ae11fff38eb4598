"""Every MachineConfig field: supported at a second value (run exact) or refused up front.

``qwengpu_mlx.core.machine_support.check_circuit_supports`` refuses, before any weight is
computed, a machine the circuit cannot run (a ``ResourceError`` naming the field, the
value and the supported range). One refusal test per field checks its limit; for each
field supported at a value other than the default, one test builds that machine's
circuit and runs a kernel that exercises the field through the model, checked exact
against the reference interpreter (the whole token stream and the memory).
Kernels: ``tests/kernels_machine/``. Limits and reasons: ``machine_support.LIMITS`` and
docs/MACHINE.md, "Limits of the circuit".
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from qwengpu_mlx.core.errors import ResourceError
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, MACHINES, MachineConfig
from qwengpu_mlx.core.machine_support import LIMITS, check_circuit_supports, limit_for, unsupported_fields

KERNELS = Path(__file__).parents[1] / "kernels_machine"
XORSHIFT = Path(__file__).parents[2] / "examples" / "kernels" / "xorshift_rounds.cu"  # results forwarded slot to slot


def machine(**changes) -> MachineConfig:
    return dataclasses.replace(PUBLISHED_MACHINE, **changes)


def assert_refused(field: str, value: int, range_text: str) -> None:
    with pytest.raises(ResourceError) as e:
        check_circuit_supports(machine(**{field: value}))
    msg = str(e.value)
    assert f"{field} = {value} is refused" in msg, msg
    assert range_text in msg, msg


def assert_supported(field: str, *values: int) -> None:
    for v in values:
        check_circuit_supports(machine(**{field: v}))


# ---------------------------------------------------------------- the table itself


def test_every_field_has_a_limit_and_the_named_machines_pass():
    assert {lim.field for lim in LIMITS} == {f.name for f in dataclasses.fields(MachineConfig)}
    for m in MACHINES.values():
        check_circuit_supports(m)  # no error
        assert unsupported_fields(m) == []
    for lim in LIMITS:
        assert lim.allows(getattr(PUBLISHED_MACHINE, lim.field))
        assert all(lim.allows(v) for v in lim.tested)


def test_every_refused_field_is_named_in_one_message():
    with pytest.raises(ResourceError) as e:
        check_circuit_supports(MachineConfig(lanes=8, rom_blocks=256, mem_words=2048))
    msg = str(e.value)
    for text in ("lanes = 8 is refused", "rom_blocks = 256 is refused", "mem_words = 2048 is refused"):
        assert text in msg


def test_a_refused_machine_is_refused_before_any_weight(tmp_path):
    """The compiler's entry point and the store refuse it first: no cache entry is written."""
    from qwengpu_mlx.compiler.pipeline import compile_machine
    from qwengpu_mlx.runtime import CircuitStore

    with pytest.raises(ResourceError, match="max_warps = 9 is refused"):
        compile_machine(machine(max_warps=9))
    with pytest.raises(ResourceError, match="max_warps = 9 is refused"):
        CircuitStore(directory=tmp_path).runner(machine(max_warps=9))
    assert not list(tmp_path.iterdir())  # nothing cached either


# ---------------------------------------------------------------- one refusal test per field


def test_lanes_4_only():
    assert_refused("lanes", 8, "the circuit supports lanes = 4 only (warp masks and records are 4 lanes wide)")
    assert_refused("lanes", 2, "lanes = 4 only")
    assert_supported("lanes", 4)


def test_max_warps_1_to_8():
    # 8 warps of 16 registers fill the register heads' 128 key rows; 8 runs exact below
    assert_refused("max_warps", 9, "the circuit supports max_warps from 1 to 8")
    assert_refused("max_warps", 16, "max_warps from 1 to 8")
    assert_refused("max_warps", 0, "max_warps from 1 to 8")
    assert_supported("max_warps", 1, 2, 3, 4, 5, 8)


def test_regs_2_to_16():
    assert_refused("regs", 17, "the circuit supports regs from 2 to 16")
    assert_refused("regs", 32, "regs from 2 to 16")
    assert_refused("regs", 1, "regs from 2 to 16")
    assert_supported("regs", 2, 9, 16)


def test_preds_1_to_8():
    assert_refused("preds", 9, "the circuit supports preds from 1 to 8")
    assert_refused("preds", 0, "preds from 1 to 8")
    assert_supported("preds", 1, 4, 8)


def test_rom_blocks_2_to_128():
    # one ROM row per block under a head's 128 key rows; 16 and 128 run exact below
    assert_refused("rom_blocks", 256, "the circuit supports rom_blocks from 2 to 128")
    assert_refused("rom_blocks", 129, "rom_blocks from 2 to 128")
    assert_refused("rom_blocks", 1, "rom_blocks from 2 to 128")
    assert_supported("rom_blocks", 2, 16, 32, 64, 128)


def test_slots_per_block_1_to_3():
    assert_refused("slots_per_block", 4, "the circuit supports slots_per_block from 1 to 3")
    assert_refused("slots_per_block", 0, "slots_per_block from 1 to 3")
    assert_supported("slots_per_block", 1, 2, 3)


def test_mem_words_1_to_1024():
    # 7-bit words up to 128 (one memory head per slot and lane), 10-bit words in 8 heads at 1,024
    assert_refused("mem_words", 1025, "the circuit supports mem_words from 1 to 1024")
    assert_refused("mem_words", 2048, "mem_words from 1 to 1024")
    assert_refused("mem_words", 0, "mem_words from 1 to 1024")
    assert_supported("mem_words", 1, 64, 126, 128, 254, 1024)


def test_word_bits_32_only():
    assert_refused("word_bits", 16, "the circuit supports word_bits = 32 only")
    assert_refused("word_bits", 64, "word_bits = 32 only")
    assert_supported("word_bits", 32)


def test_step_budget_any_positive_host_side():
    assert not limit_for("step_budget").circuit
    assert_refused("step_budget", 0, "step_budget >= 1")
    assert_refused("step_budget", -5, "step_budget >= 1")
    assert_supported("step_budget", 1, 7, 1 << 20)
    # host-side: the reference interpreter (and the launch loop) stop at the budget
    from qwengpu_mlx.core.errors import StepBudgetExceeded
    from qwengpu_mlx.core.reference import run_program

    program = _program(XORSHIFT, {"state": [1, 2, 3, 4], "rounds": 10}, 4, 1, PUBLISHED_MACHINE)
    run_program(program, machine(step_budget=64))
    with pytest.raises(StepBudgetExceeded):
        run_program(program, machine(step_budget=8))


def test_non_integer_sizes_refused():
    with pytest.raises(ResourceError, match="regs must be an integer"):
        check_circuit_supports(machine(regs=8.0))
    with pytest.raises(ResourceError, match="lanes must be an integer"):
        check_circuit_supports(machine(lanes=True))


# ---------------------------------------------------------------- supported second values, through the model


def _program(source: Path, args: dict, block: int, grid: int, m: MachineConfig):
    from tests.support.launching import bound_program

    return bound_program(source, args=args, block=block, grid=grid, machine=m)


# one machine with every supported field at a second value: one circuit build for all of them
SECOND = machine(max_warps=2, regs=9, preds=4, slots_per_block=2, mem_words=128, rom_blocks=16)


@pytest.fixture(scope="module")
def second_runner():
    from qwengpu_mlx.runtime import CircuitStore

    check_circuit_supports(SECOND)
    return CircuitStore().runner(SECOND)


def run_exact(runner, source: Path, args: dict, *, block: int, grid: int = 1) -> None:
    """Run the kernel on ``runner``'s machine: the whole launch and memory equal to the reference's."""
    from qwengpu_mlx.core.reference import run_program
    from tests.support.launching import on_runner

    m = runner.machine
    program = _program(source, args, block, grid, m)
    ref = run_program(program, m)
    result = on_runner(program, runner, check=True)
    assert result.check.exact, "\n".join(result.check.problems)
    assert result.memory == list(ref.memory)


def test_max_warps_2_runs_exact(second_runner):
    # 8 threads in both warps: shared memory written, a barrier, then read across warps
    run_exact(second_runner, KERNELS / "warps_swap.cu", {"x": [1, 2, 3, 4, 5, 6, 7, -8], "out": [0] * 8}, block=8)


def test_regs_9_and_rom_blocks_16_run_exact(second_runner):
    # needs all 8 usable registers (r8, the top row, included), in 13 of the 16 ROM blocks
    # (4-bit pcs in every record)
    x = [-11, 3, -6, 8, -1, -10, 4, -5, 9, 0, -9, 5, -4, 10, 1, -8, 6, -3, 11, 2, -7, 7, -2, -11]
    run_exact(second_runner, KERNELS / "regs_pressure.cu", {"x": x, "out": [0] * 24}, block=4)


def test_preds_4_runs_exact(second_runner):
    # four predicates live at once (the kernel does not fit 3)
    run_exact(second_runner, KERNELS / "preds_live.cu", {"x": [5, -4, 7, 200, 1, 2, 3, 4], "out": [0] * 4}, block=4)


def test_slots_per_block_2_runs_exact(second_runner):
    # chains of dependent instructions: results forwarded between the two slots of a block
    # (2 rounds: the loop body's chain, then the loop taken again; a third round repeats them)
    run_exact(second_runner, XORSHIFT, {"state": [1, -1831433054, 12345, -1], "rounds": 2}, block=4)


def test_mem_words_128_runs_exact(second_runner):
    # the output array ends at word 127, the last of 128 (stores, loads near the top, an atomic)
    # (words read are non-zero, the rest zero: zero words take no prompt record)
    x = [3, -1, 4, 1] + [0] * 116 + [-5, 9, 2, -6]
    run_exact(second_runner, KERNELS / "mem_top.cu", {"x": x, "out": [0] * 4, "n": 124}, block=4)


# ---------------------------------------------------------------- the large machine: 128 ROM blocks, 8 warps

EXAMPLES = Path(__file__).parents[2] / "examples" / "kernels"


@pytest.fixture(scope="module")
def large_runner():
    from qwengpu_mlx.core.machine import LARGE_MACHINE
    from qwengpu_mlx.runtime import CircuitStore

    check_circuit_supports(LARGE_MACHINE)
    return CircuitStore().runner(LARGE_MACHINE)


def _example(name: str) -> tuple[Path, dict]:
    import json

    spec = json.loads((EXAMPLES / f"{name}.json").read_text())
    assert spec["machine"] == "large"
    return EXAMPLES / f"{name}.cu", spec


def test_max_warps_8_runs_a_32_thread_block_exact(large_runner):
    # warps 4..7 in EXEC, ENT and WST records, blockDim.x = 32 in six bits, barriers and a shuffle
    source, spec = _example("block32_reduce")
    run_exact(large_runner, source, spec["args"], block=32)


def test_mem_words_1024_reads_every_memory_head_exact(large_runner):
    # 10-bit word digits, a two-stage address thermometer, 8 memory heads per slot and lane:
    # 32 loads spread over words 7..968 and 32 stores into words 992..1023, the last of 1,024
    # (only non-zero words take a prompt record, so the launch stays short)
    a = [0] * 992
    for t in range(32):
        a[31 * t + 7] = (t * 2654435761) % 2001 - 1000
    run_exact(large_runner, KERNELS / "mem_stride.cu", {"a": a, "out": [0] * 32}, block=32)


def test_rom_blocks_128_runs_a_program_past_block_100_exact(large_runner):
    # 7-bit block numbers in the terminator, EXEC, ENT and WST records (one thread: fewer records)
    source, _ = _example("long_program")
    args = {"a": [-12345], "out": [0], "n": 1}
    program = _program(source, args, 1, 1, large_runner.machine)
    assert len(program.blocks) > 100
    run_exact(large_runner, source, args, block=1)
