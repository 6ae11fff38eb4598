"""2-D and 3-D launches and dynamic shared memory (``host/launch_dims.py``, ``--shared``).

Expected values come from what CUDA defines: a thread's ``threadIdx`` is its position in
the block with ``x`` fastest, ``blockIdx`` the same in the grid, ``blockDim``/``gridDim``
the launch's sizes; every ``extern __shared__`` array starts at the one dynamic region.
"""

from __future__ import annotations

import itertools
import json
from copy import deepcopy
from pathlib import Path

import pytest

from qwengpu_mlx.core.errors import LaunchError, ResourceError, UnsupportedError
from qwengpu_mlx.core.launch_spec import dims3, dims_value, parse_dims, read_launch_spec
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, LARGE_MACHINE
from qwengpu_mlx.host.binding import bind_arguments, param_kinds, shared_variables
from qwengpu_mlx.host.launch import compile_kernel
from qwengpu_mlx.host.launch_dims import LAUNCH_SPECIALS, exact_divider, lower_launch_specials
from qwengpu_mlx.host.translate import Translator

from tests.support.cli import cli, cu, needs_clang
from tui.commands import CommandError, parse_run
from tests.support.launching import bound_program, reference

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "kernels"

COORDS = """\
__global__ void coords(int* out) {
    int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    int i = 8 * (b * blockDim.x * blockDim.y * blockDim.z + t);
    out[i + 0] = threadIdx.x; out[i + 1] = threadIdx.y; out[i + 2] = threadIdx.z;
    out[i + 3] = blockIdx.x;  out[i + 4] = blockIdx.y;  out[i + 5] = blockIdx.z;
    out[i + 6] = blockDim.x * 100 + blockDim.y * 10 + blockDim.z;
    out[i + 7] = gridDim.x * 100 + gridDim.y * 10 + gridDim.z;
}
"""


def cuda_coords(block, grid) -> list[int]:
    """What every thread of the launch reads, by CUDA's numbering (x fastest), 8 words each."""
    (bx, by, bz), (gx, gy, gz) = dims3(block), dims3(grid)
    out = []
    for cz, cy, cx in itertools.product(range(gz), range(gy), range(gx)):
        for z, y, x in itertools.product(range(bz), range(by), range(bx)):
            out += [x, y, z, cx, cy, cz, 100 * bx + 10 * by + bz, 100 * gx + 10 * gy + gz]
    return out


# ------------------------------------------------------------------- the divisions


@pytest.mark.parametrize("d", range(1, 33))
def test_the_multiply_shift_divides_every_index_exactly(d):
    for count in (16, 32, 64, 1024):
        m, k = exact_divider(d, count)
        assert (count - 1) * m < 1 << 32
        assert all((t * m) >> k == t // d for t in range(count)), (d, count)


# ------------------------------------------------------------------ the shapes


@needs_clang
@pytest.mark.parametrize("block, grid", [
    ((4, 4), 1), ((3, 5), 1), ((2, 3, 2), 1), ((5, 1, 3), 1), ((1, 16), 1), ((16, 1), (1, 3)),
    ((2, 2), (3, 2)), ((3, 2, 2), (2, 1, 2)), (4, (2, 3)), ((7, 2), (3, 1, 2)), ((2, 2, 2), (2, 3, 2)),
])
def test_every_thread_reads_its_cuda_coordinates(tmp_path, block, grid):
    (bx, by, bz), (gx, gy, gz) = dims3(block), dims3(grid)
    words = 8 * bx * by * bz * gx * gy * gz
    machine = PUBLISHED_MACHINE if words <= PUBLISHED_MACHINE.mem_words else LARGE_MACHINE
    res = reference(cu(tmp_path, COORDS, "coords.cu"), args={"out": [0] * words}, block=block, grid=grid,
                    machine=machine)
    assert res.outputs["out"] == cuda_coords(block, grid)


@needs_clang
def test_a_thread_block_too_large_in_all_names_its_threads_and_the_large_machine(tmp_path):
    path = cu(tmp_path, COORDS, "coords.cu")
    with pytest.raises(ResourceError) as e:
        reference(path, args={"out": [0] * 8}, block=(8, 4))
    msg = str(e.value)
    assert msg.startswith("coords.cu:1: ") and "blockDim (8, 4, 1) is 32 threads" in msg
    assert "1..16 threads per block" in msg and "--machine large" in msg
    with pytest.raises(ResourceError, match=r"blockDim \(8, 0, 1\)"):
        reference(path, args={"out": [0] * 8}, block=(8, 0))
    with pytest.raises(ResourceError, match=r"gridDim \(2, 0, 1\): must be at least 1"):
        reference(path, args={"out": [0] * 8}, grid=(2, 0))


# ----------------------------------------------------- 1-D launches stay as they were


def _translated(name: str, block, grid):
    spec = json.loads((EXAMPLES / f"{name}.json").read_text())
    ck = compile_kernel(EXAMPLES / f"{name}.cu", spec["kernel"])
    sv, dyn = shared_variables(ck.module, ck.kernel)
    bind_arguments(ck.params, spec["args"], name)
    tr = Translator(ck.kernel, {v.name for v in sv + dyn}, param_kinds(ck.kernel, ck.params))
    return ck, tr.run()


def _one_d_examples() -> list[str]:
    out = []
    for path in sorted(EXAMPLES.glob("*.json")):
        spec = json.loads(path.read_text())
        if isinstance(spec["block"], int) and isinstance(spec["grid"], int):
            out.append(path.stem)
    return out


@needs_clang
def test_a_one_dimensional_launch_of_a_kernel_reading_only_x_is_not_rewritten():
    """For every 1-D conformance kernel that reads no ``.y``/``.z`` register the pass leaves the
    translated program exactly as it was: its programs and tokens cannot change."""
    checked = 0
    for name in _one_d_examples():
        ck, bbs = _translated(name, 4, 1)
        if any(f"%{s}" in ck.ptx for s in LAUNCH_SPECIALS):
            continue
        before = deepcopy(bbs)
        spec = json.loads((EXAMPLES / f"{name}.json").read_text())
        lower_launch_specials(bbs, dims3(spec["block"]), dims3(spec["grid"]))
        assert bbs == before, name
        checked += 1
    assert checked >= 50


@needs_clang
def test_an_int_block_and_its_one_dimensional_list_bind_the_same_program():
    spec = json.loads((EXAMPLES / "dot.json").read_text())
    progs = [bound_program(EXAMPLES / "dot.cu", args=spec["args"], block=b, grid=g)
             for b, g in ((spec["block"], 1), ([spec["block"]], [1]), ((spec["block"], 1, 1), (1, 1, 1)))]
    assert progs[0] == progs[1] == progs[2]


@needs_clang
def test_different_dims_never_share_a_program(tmp_path):
    """The compile cache keys on the kernel's content only; the dims are bound each launch."""
    path = cu(tmp_path, COORDS, "coords.cu")
    for block in ((2, 4), (4, 2), (8, 1), (1, 8)):
        assert reference(path, args={"out": [0] * 64}, block=block).outputs["out"] == cuda_coords(block, 1)


# ------------------------------------------------------------ the launch's forms


def test_dims_are_ints_for_one_dimensional_launches_and_tuples_otherwise():
    assert dims3(8) == (8, 1, 1) and dims3([8, 4]) == (8, 4, 1) and dims3((2, 3, 4)) == (2, 3, 4)
    assert dims_value([8]) == 8 and dims_value((8, 1, 1)) == 8 and dims_value([8, 4]) == (8, 4)
    assert dims_value([8, 1, 2]) == (8, 1, 2)
    assert parse_dims("8") == 8 and parse_dims("8,4") == (8, 4) and parse_dims("2,3,1") == (2, 3)
    for bad in ("8x4", "1,2,3,4", ""):
        with pytest.raises(LaunchError):
            parse_dims(bad)
    with pytest.raises(LaunchError):
        dims3([1, 2, 3, 4])
    with pytest.raises(LaunchError):
        dims3(True)


def test_a_launch_file_takes_lists_and_shared_bytes(tmp_path):
    good = tmp_path / "k.json"
    good.write_text(json.dumps({"block": [8, 4], "grid": [2, 3], "shared": 64}))
    assert read_launch_spec(good)["block"] == [8, 4]
    for bad, text in (({"block": [8, "4"]}, "'block' must be"), ({"grid": [1, 2, 3, 4]}, "'grid' must be"),
                      ({"shared": -4}, "'shared' must be"), ({"shared": "64"}, "'shared' must be")):
        f = tmp_path / "bad.json"
        f.write_text(json.dumps(bad))
        with pytest.raises(LaunchError, match=text):
            read_launch_spec(f)


@needs_clang
def test_the_command_line_takes_block_and_grid_as_lists(tmp_path):
    path = cu(tmp_path, COORDS, "coords.cu")
    r = cli("run", path, "--arg", "out=" + ",".join(["0"] * 96), "--block", "3,2", "--grid", "1,2", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outputs"]["out"] == cuda_coords((3, 2), (1, 2))
    r = cli("run", path, "--arg", "out=0", "--block", "3x2")
    assert r.returncode == 2 and "--block" in r.stderr and "X,Y" in r.stderr


# -------------------------------------------------------- dynamic shared memory

DYNAMIC = """\
extern __shared__ int dyn[];
__global__ void ext2(int *a) {
  extern __shared__ int other[];
  __shared__ int s[4];
  int t = threadIdx.x;
  dyn[t] = a[t] * 2;
  s[t] = a[t] + 100;
  __syncthreads();
  a[t] = other[3 - t] + s[(t + 1) & 3];
}
"""


@needs_clang
def test_extern_shared_arrays_share_the_launch_sized_region(tmp_path):
    """``dyn`` and ``other`` are the same memory (CUDA: every extern __shared__ array
    starts at the dynamic region), after the static ``s``."""
    a = [1, 2, 3, 4]
    res = reference(cu(tmp_path, DYNAMIC, "ext2.cu"), args={"a": a}, shared=16)
    assert res.outputs["a"] == [2 * a[3 - t] + a[(t + 1) & 3] + 100 for t in range(4)]
    bases = {s.name: (s.base, s.length) for s in res.program.shared}
    assert bases["dyn"] == bases["other"] == (4 + 4, 4)


@needs_clang
def test_extern_shared_without_shared_bytes_is_refused_at_its_declaration(tmp_path):
    with pytest.raises(UnsupportedError) as e:
        reference(cu(tmp_path, DYNAMIC, "ext2.cu"), args={"a": [1, 2, 3, 4]})
    msg = str(e.value)
    assert msg.startswith("ext2.cu:1: ") and "extern __shared__ dyn[]" in msg and "--shared BYTES" in msg


@needs_clang
def test_shared_bytes_beyond_memory_name_the_large_machine(tmp_path):
    path = cu(tmp_path, DYNAMIC, "ext2.cu")
    with pytest.raises(ResourceError) as e:
        reference(path, args={"a": [1, 2, 3, 4]}, shared=4 * 200)
    msg = str(e.value)
    assert msg.startswith("ext2.cu:2: ") and "needs 208 memory words" in msg
    assert "--machine large" in msg and "1,024 memory words" in msg
    res = reference(path, args={"a": [1, 2, 3, 4]}, shared=4 * 200, machine=LARGE_MACHINE)
    assert res.outputs["a"] == [2 * a + b + 100 for a, b in zip([4, 3, 2, 1], [2, 3, 4, 1])]
    with pytest.raises(ResourceError) as e:
        reference(path, args={"a": [1, 2, 3, 4]}, shared=4 * 2000, machine=LARGE_MACHINE)
    assert "--machine large" not in str(e.value)


@needs_clang
def test_the_command_line_and_launch_file_size_dynamic_shared_memory(tmp_path):
    path = cu(tmp_path, DYNAMIC, "ext2.cu")
    r = cli("run", path, "--arg", "a=1,2,3,4", "--shared", "16", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outputs"]["a"] == [2 * 4 + 102, 2 * 3 + 103, 2 * 2 + 104, 2 * 1 + 101]
    (tmp_path / "ext2.json").write_text(json.dumps({"shared": 16, "args": {"a": [1, 2, 3, 4]}}))
    r = cli("run", path, "--json")
    assert r.returncode == 0, r.stderr
    r = cli("run", path, "--arg", "a=1,2,3,4")
    assert r.returncode == 1 and "ext2.cu:1:" in r.stderr and "--shared BYTES" in r.stderr


def test_the_dashboards_run_takes_dims_and_shared_bytes():
    r = parse_run("examples/kernels/dot.cu a=1,2 b=3,4 out=0 n=2 --block 2,2 --grid=1,3 --shared 16")
    assert (r.block, r.grid, r.shared) == ((2, 2), (1, 3), 16)
    assert r.describe().endswith("--block 2,2 --grid 1,3 --shared 16")
    r = parse_run("examples/kernels/dot.cu a=1,2 b=3,4 out=0 n=2 --block 8")
    assert (r.block, r.grid, r.shared) == (8, 1, 0)
    r = parse_run("dyn_shared_reduce")  # the launch file's lists and bytes
    spec = json.loads((EXAMPLES / "dyn_shared_reduce.json").read_text())
    assert (r.block, r.grid, r.shared) == (spec["block"], spec["grid"], spec["shared"])
    assert parse_run("transpose_2d").block == tuple(json.loads((EXAMPLES / "transpose_2d.json").read_text())["block"])
    for bad in ("--block 2x2", "--grid 1,2,3,4", "--shared -4"):
        with pytest.raises(CommandError):
            parse_run(f"dot {bad}")
