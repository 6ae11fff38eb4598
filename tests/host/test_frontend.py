"""CUDA -> PTX with clang and our prelude, then the parser, on small real kernels."""

from __future__ import annotations

import os
import subprocess

import pytest

from qwengpu_mlx.core.errors import ClangNotFound, FrontendError
from qwengpu_mlx.host import frontend
from qwengpu_mlx.host.frontend import (
    cuda_text_to_ptx,
    cuda_to_ptx,
    demangle_kernel_name,
    find_clang,
    load_module,
    load_ptx,
    select_kernel,
)
from qwengpu_mlx.host.ptx_ast import ImmRef, PtxInstr, PtxLabel, SpecialRef, SymRef
from qwengpu_mlx.host.ptx_parser import parse_ptx


from tests.support.cli import needs_clang


def compile_cu(tmp_path, code, name="kernel.cu"):
    path = tmp_path / name
    path.write_text(code)
    return parse_ptx(cuda_to_ptx(path))


def only_kernel(tmp_path, code):
    (k,) = compile_cu(tmp_path, code).kernels
    return k


def instrs(kernel, opcode=None):
    return [i for i in kernel.body if isinstance(i, PtxInstr) and (opcode is None or i.opcode == opcode)]


# ------------------------------------------------------------------------ compiling


@needs_clang
def test_thread_index_params_and_ptx_version(tmp_path):
    m = compile_cu(
        tmp_path,
        "__global__ void scale(int *out, int k) {\n"
        "  out[blockIdx.x * blockDim.x + threadIdx.x] = k * (int)gridDim.x;\n}\n",
    )
    assert float(m.version) >= 6.0  # shfl.sync needs PTX 6.0
    assert m.target.startswith("sm_75")
    (k,) = m.kernels
    assert demangle_kernel_name(k.name) == "scale"
    assert [p.type for p in k.params] == ["u64", "u32"]
    assert [p.name for p in k.params] == [f"{k.name}_param_0", f"{k.name}_param_1"]
    specials = {op.name for i in instrs(k) for op in i.operands if isinstance(op, SpecialRef)}
    assert {"tid.x", "ntid.x", "ctaid.x", "nctaid.x"} <= specials


@needs_clang
def test_warp_size_is_32(tmp_path):
    k = only_kernel(tmp_path, "__global__ void ws(int *out) { out[0] = warpSize; }\n")
    (st,) = instrs(k, "st")
    (mov,) = [i for i in instrs(k, "mov") if i.operands[0] == st.operands[1]]  # st takes a register
    assert mov.operands[1] == ImmRef(32)


@needs_clang
def test_shared_memory_and_syncthreads(tmp_path):
    k = only_kernel(
        tmp_path,
        "__global__ void rev(int *a) {\n"
        "  __shared__ int s[16];\n"
        "  unsigned t = threadIdx.x;\n"
        "  s[t] = a[t];\n"
        "  __syncthreads();\n"
        "  a[t] = s[blockDim.x - 1 - t];\n}\n",
    )
    (sh,) = k.shared
    assert sh.space == "shared" and sh.size_bytes == 64
    (bar,) = instrs(k, "bar")
    assert "sync" in bar.mods and bar.operands == [ImmRef(0)]
    assert any("shared" in i.mods for i in instrs(k, "st"))
    assert any("shared" in i.mods for i in instrs(k, "ld"))


@needs_clang
def test_atomic_add_returns_old_value(tmp_path):
    k = only_kernel(
        tmp_path,
        "__global__ void count(int *c, unsigned *u, int *old) {\n"
        "  old[threadIdx.x] = atomicAdd(c, 1) + (int)atomicAdd(u, 2u);\n}\n",
    )
    atoms = instrs(k, "atom")
    assert len(atoms) == 2
    for a in atoms:
        assert "add" in a.mods
    assert sorted(a.operands[2].value for a in atoms) == [1, 2]
    # the old values are used: each atom's destination feeds the add that is stored
    (add,) = [i for i in instrs(k, "add") if i.mods == ("s32",)]
    assert {a.operands[0] for a in atoms} == set(add.operands[1:])


HARDWARE_SHFL_CASES = [
    # call, mode, the 4-lane c operand: ((4 - width) << 8) | 3, up: (4 - width) << 8; these
    # stay inside the machine's 4-lane warp, so its hardware shuffle gives the 32-lane result
    ("__shfl_sync(0xffffffff, v, 2, 4)", "idx", 3),
    ("__shfl_sync(0xffffffff, v, 1, 2)", "idx", (2 << 8) | 3),
    ("__shfl_up_sync(0xffffffff, v, 1, 2)", "up", 2 << 8),
    ("__shfl_up_sync(0xffffffff, v, 3, 4)", "up", 0),
    ("__shfl_down_sync(0xffffffff, v, 1, 2)", "down", (2 << 8) | 3),
    ("__shfl_xor_sync(0xffffffff, v, 1)", "bfly", 3),
    ("__shfl_xor_sync(0xffffffff, v, 2, 4)", "bfly", 3),
    ("__shfl_xor_sync(0xffffffff, v, 3, 2)", "bfly", (2 << 8) | 3),
]
EXCHANGE_SHFL_CASES = [
    # 32-lane shuffles that leave the machine's 4 lanes: an exchange through shared memory
    "__shfl_sync(0xffffffff, v, 2)",
    "__shfl_up_sync(0xffffffff, v, 1)",
    "__shfl_down_sync(0xffffffff, v, 1)",
    "__shfl_down_sync(0xffffffff, v, 4, 8)",
    "__shfl_xor_sync(0xffffffff, v, 4)",
]


def _shuffle_kernel(tmp_path, call: str, vtype: str):
    return only_kernel(
        tmp_path,
        f"__global__ void sh({vtype} *a) {{\n  {vtype} v = a[threadIdx.x];\n"
        f"  a[threadIdx.x] = {call};\n}}\n",
    )


@needs_clang
@pytest.mark.parametrize("vtype", ["int", "unsigned"])
@pytest.mark.parametrize("call,mode,c", HARDWARE_SHFL_CASES)
def test_shuffles_inside_four_lanes_use_the_hardware_shuffle(tmp_path, call, mode, c, vtype):
    k = _shuffle_kernel(tmp_path, call, vtype)
    (s,) = instrs(k, "shfl")
    assert s.mods == ("sync", mode, "b32")
    # d, a, b, c, membermask: the prelude's 4-lane form
    assert s.operands[3] == ImmRef(c)
    assert s.operands[4] == ImmRef(0xF)
    assert not instrs(k, "bar")


@needs_clang
@pytest.mark.parametrize("vtype", ["int", "unsigned"])
@pytest.mark.parametrize("call", EXCHANGE_SHFL_CASES)
def test_wider_shuffles_exchange_through_shared_memory(tmp_path, call, vtype):
    k = _shuffle_kernel(tmp_path, call, vtype)
    assert not instrs(k, "shfl")
    assert len(instrs(k, "bar")) == 2  # published, then read before the scratch is reused
    assert any("shared" in i.mods for i in instrs(k, "st"))
    assert any("shared" in i.mods for i in instrs(k, "ld"))


@needs_clang
def test_min_max_overloads(tmp_path):
    k = only_kernel(
        tmp_path,
        "__global__ void mm(int *a, unsigned *b, int n) {\n"
        "  int t = threadIdx.x;\n"
        "  a[t] = min(a[t], n) + max(a[t], -3);\n"
        "  b[t] = min(b[t], 7u) + max(b[t], threadIdx.x) + min(threadIdx.x, n);\n}\n",
    )
    mods = {(i.opcode, i.mods) for i in instrs(k)}
    assert {("min", ("s32",)), ("max", ("s32",)), ("min", ("u32",)), ("max", ("u32",))} <= mods
    (maxs,) = [i for i in instrs(k, "max") if i.mods == ("s32",)]
    assert maxs.operands[2] == ImmRef(-3)


@needs_clang
def test_activemask_is_a_vote(tmp_path):
    k = only_kernel(tmp_path, "__global__ void am(unsigned *a) { a[threadIdx.x] = __activemask(); }\n")
    assert not instrs(k, "activemask")  # the lanes that vote: every thread of the block
    assert instrs(k, "atom") and len(instrs(k, "bar")) == 2


@needs_clang
def test_loop_has_labels_and_guarded_branches(tmp_path):
    k = only_kernel(
        tmp_path,
        "__global__ void sum(int *a, int n) {\n"
        "  int s = 0;\n"
        "  for (int i = 0; i < n; i++) s += a[i] * (int)threadIdx.x;\n"
        "  a[threadIdx.x] = s;\n}\n",
    )
    labels = {x.name for x in k.body if isinstance(x, PtxLabel)}
    bras = instrs(k, "bra")
    assert labels and bras
    assert any(b.guard is not None for b in bras)
    for b in bras:
        (target,) = b.operands
        assert isinstance(target, SymRef) and target.name in labels
    assert instrs(k, "setp")


# ------------------------------------------------------------------------ errors


@needs_clang
def test_syntax_error_reports_file_and_line(tmp_path):
    path = tmp_path / "broken_kernel.cu"
    path.write_text("__global__ void k(int *a) {\n  int x = 1\n  a[0] = x;\n}\n")
    with pytest.raises(FrontendError) as e:
        cuda_to_ptx(path)
    msg = str(e.value)
    assert "broken_kernel.cu:2:" in msg
    assert "error" in msg


@needs_clang
def test_cuda_text_diagnostics_name_the_given_file():
    with pytest.raises(FrontendError, match=r"mine\.cu:1:"):
        cuda_text_to_ptx("__global__ void k() { undeclared(); }\n", "mine.cu")


def test_missing_source_file(tmp_path):
    with pytest.raises(FrontendError, match="no such CUDA source"):
        cuda_to_ptx(tmp_path / "absent.cu")


def test_unknown_frontend(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text("__global__ void k() {}\n")
    with pytest.raises(FrontendError, match="unknown front end"):
        cuda_to_ptx(path, frontend="gcc")


def test_clang_env_var_pointing_nowhere(tmp_path, monkeypatch):
    monkeypatch.setenv("QWENGPU_CLANG", str(tmp_path / "no-such-clang"))
    with pytest.raises(ClangNotFound) as e:
        find_clang()
    msg = str(e.value)
    assert "QWENGPU_CLANG" in msg
    assert "apt-get install clang" in msg or "brew install llvm" in msg
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k() {}\n")
    with pytest.raises(ClangNotFound):
        cuda_to_ptx(src)


def test_no_clang_on_path(tmp_path, monkeypatch):
    monkeypatch.delenv("QWENGPU_CLANG", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(frontend.sys, "platform", "linux")
    with pytest.raises(ClangNotFound, match="apt-get install clang"):
        find_clang()
    monkeypatch.setattr(frontend.sys, "platform", "darwin")
    monkeypatch.setattr(frontend, "_executable", lambda p: False)
    with pytest.raises(ClangNotFound, match="brew install llvm"):
        find_clang()


def test_clang_env_var_is_used(tmp_path, monkeypatch):
    fake = tmp_path / "my-clang"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("QWENGPU_CLANG", str(fake))
    assert find_clang() == str(fake)


def test_versioned_clang_found_on_path(tmp_path, monkeypatch):
    for v in ("14", "17"):
        f = tmp_path / f"clang-{v}"
        f.write_text("#!/bin/sh\n")
        f.chmod(0o755)
    monkeypatch.delenv("QWENGPU_CLANG", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(frontend.sys, "platform", "linux")
    assert find_clang() == str(tmp_path / "clang-17")


# ------------------------------------------------------------------------ kernels by name


@pytest.mark.parametrize(
    "mangled,name",
    [
        ("_Z6reducePiPKi", "reduce"),
        ("_Z1kv", "k"),
        ("_ZN2ns3fooEPi", "ns::foo"),
        ("_ZL3barPj", "bar"),
        ("_Z6kernelILi4EEvPi", "kernel"),
        ("plain_c_name", "plain_c_name"),
    ],
)
def test_demangle(mangled, name):
    assert demangle_kernel_name(mangled) == name


TWO_KERNELS_PTX = (
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry _Z6reducePi(\n\t.param .u64 _Z6reducePi_param_0\n)\n{\n\tret;\n}\n"
    ".visible .entry scan_c(\n\t.param .u64 scan_c_param_0\n)\n{\n\tret;\n}\n"
)


def test_select_kernel_by_name():
    m = parse_ptx(TWO_KERNELS_PTX)
    assert select_kernel(m, "reduce").name == "_Z6reducePi"
    assert select_kernel(m, "_Z6reducePi").name == "_Z6reducePi"
    assert select_kernel(m, "scan_c").name == "scan_c"
    with pytest.raises(FrontendError, match="available kernels: reduce, scan_c"):
        select_kernel(m, "reduc")
    with pytest.raises(FrontendError, match="reduce, scan_c"):
        select_kernel(m, None)


def test_select_only_kernel_and_empty_module():
    m = parse_ptx(TWO_KERNELS_PTX.split(".visible .entry scan_c")[0])
    assert select_kernel(m, None).name == "_Z6reducePi"
    with pytest.raises(FrontendError, match="no kernels"):
        select_kernel(parse_ptx(".version 7.0\n.target sm_75\n"), None)


@needs_clang
def test_select_kernel_from_compiled_cuda(tmp_path):
    path = tmp_path / "two.cu"
    path.write_text(
        "__global__ void alpha(int *a) { a[threadIdx.x] = 1; }\n"
        'extern "C" __global__ void beta(int *a) { a[threadIdx.x] = 2; }\n'
    )
    m = load_module(path)
    assert select_kernel(m, "alpha").name.startswith("_Z5alpha")
    assert select_kernel(m, "beta").name == "beta"
    with pytest.raises(FrontendError, match="alpha, beta"):
        select_kernel(m, "gamma")


def test_load_ptx_file_and_text(tmp_path):
    path = tmp_path / "m.ptx"
    path.write_text(TWO_KERNELS_PTX)
    assert len(load_ptx(path).kernels) == 2
    assert len(load_ptx(str(path)).kernels) == 2
    assert len(load_ptx(TWO_KERNELS_PTX).kernels) == 2
    assert len(load_module(path).kernels) == 2
    with pytest.raises(FrontendError, match="no such PTX file"):
        load_ptx(str(tmp_path / "absent.ptx"))


# ------------------------------------------------------------------------ nvcc (optional)


def _nvcc_works() -> bool:
    try:
        nvcc = frontend.find_nvcc()
        r = subprocess.run([nvcc, "--version"], capture_output=True, timeout=30)
        return r.returncode == 0
    except (FrontendError, OSError, subprocess.SubprocessError):
        return False


@pytest.mark.skipif(not _nvcc_works(), reason="nvcc not available")
def test_nvcc_front_end_keeps_the_gpus_own_warps(tmp_path):
    path = tmp_path / "nv.cu"
    path.write_text(
        "__global__ void nv(int *a) {\n"
        "  int v = a[threadIdx.x];\n"
        "  a[threadIdx.x] = __shfl_down_sync(0xffffffff, v, 1, 2) + warpSize;\n}\n"
    )
    m = parse_ptx(cuda_to_ptx(path, frontend="nvcc"))
    k = select_kernel(m, "nv")
    (s,) = instrs(k, "shfl")
    assert s.mods == ("sync", "down", "b32")
    # nvcc passes the constants in registers: follow the c operand to its mov
    c = s.operands[3]
    movs = {i.operands[0]: i.operands[1] for i in instrs(k, "mov")}
    assert movs.get(c, c) == ImmRef((30 << 8) | 31)  # CUDA's 32-lane encoding
    assert any(ImmRef(32) in i.operands for i in instrs(k, "add"))


@pytest.mark.skipif(not _nvcc_works(), reason="nvcc not available")
def test_nvcc_syntax_error_reports_file_and_line(tmp_path):
    path = tmp_path / "nvbad.cu"
    path.write_text("__global__ void k(int *a) {\n  int x = 1\n  a[0] = x;\n}\n")
    with pytest.raises(FrontendError, match=r"nvbad\.cu\(\d+\)"):
        cuda_to_ptx(path, frontend="nvcc")


def test_prelude_ships_next_to_the_module():
    assert frontend.PRELUDE.is_file()
    assert os.path.basename(frontend.PRELUDE) == "prelude.h"
