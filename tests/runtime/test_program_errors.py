"""What a program cannot do, and what goes wrong in one: refused at the user's line before
the program starts (a kernel printf, a char array parameter), a crash named by its signal,
a kernel's out-of-memory access reported as the machine reports it, memory errors with
CUDA's codes, and the single kernel's options refused for a program."""

from __future__ import annotations

import pytest

from qwengpu_mlx.cli.main import main


def _run(capfd, tmp_path, code: str, *options: str) -> tuple[int, str, str]:
    path = tmp_path / "prog.cu"
    path.write_text(code)
    status = main(["run", str(path), "--backend", "reference", "--quiet", *options])
    out, err = capfd.readouterr()
    return status, out, err


def test_kernel_printf_formats_as_c_and_prints_at_synchronization(capfd, tmp_path):
    code = ("#include <cstdio>\n__global__ void k(int v) {\n"
            '  if (threadIdx.x == 1) printf("[%5d|%-4x|%c|%u|100%%]\\n", v, v, 65 + v, v * 3);\n'
            '  if (threadIdx.x == 0) printf("first\\n");\n}\n'
            'int main() { k<<<1, 2>>>(10); printf("host\\n"); k<<<1, 2>>>(-1);\n'
            '  printf("between\\n"); cudaDeviceSynchronize(); return 0; }\n')
    status, out, err = _run(capfd, tmp_path, code)
    first = "first\n[   10|a   |K|30|100%]\n"
    second = "first\n[   -1|ffffffff|@|4294967293|100%]\n"
    assert (status, out) == (0, "host\n" + first + "between\n" + second), err


def test_a_char_array_parameter_is_refused_before_the_program_starts(capfd, tmp_path):
    code = ("#include <cstdio>\n__global__ void k(char *s) { s[threadIdx.x] = 'a'; }\n"
            'int main() { printf("started\\n"); char *d; cudaMalloc(&d, 4); k<<<1, 4>>>(d); return 0; }\n')
    status, out, err = _run(capfd, tmp_path, code)
    assert status != 0 and "started" not in out
    assert "prog.cu:2" in err and "use an int array" in err


def test_a_crash_is_named_by_its_signal(capfd, tmp_path):
    code = ('#include <cstdio>\nint main() { printf("before\\n"); fflush(stdout); volatile int *p = 0; *p = 1; '
            "return 0; }\n")
    status, out, err = _run(capfd, tmp_path, code)
    assert (status, out) == (139, "before\n")
    assert "killed by SIGSEGV" in err


def test_an_access_outside_memory_is_the_machines_fault_and_a_launch_failure(capfd, tmp_path):
    code = ("#include <cstdio>\n__global__ void k(int *a) {\n  a[threadIdx.x * 1000] = 1;\n}\n"
            "int main() { int *d; cudaMalloc(&d, 16); k<<<1, 4>>>(d);\n"
            '  printf("%s\\n", cudaGetErrorString(cudaDeviceSynchronize()));\n'
            '  printf("%s\\n", cudaGetErrorName(cudaMalloc(&d, 4))); return 0; }\n')
    status, out, err = _run(capfd, tmp_path, code)
    assert status == 0
    assert out == "unspecified launch failure\ncudaErrorLaunchFailure\n"
    assert "memory fault" in err and "outside the memory" in err


def test_memory_errors_have_cudas_codes(capfd, tmp_path):
    code = ("#include <cstdio>\nint main() {\n  int *d; int h[8] = {0};\n  cudaMalloc(&d, 16);\n"
            '  printf("%d\\n", (int)cudaMemcpy(h, d, 32, cudaMemcpyDeviceToHost));\n'
            '  printf("%d\\n", (int)cudaFree(d + 1));\n'
            '  printf("%d\\n", (int)cudaMalloc(&d, 1 << 20));\n'
            '  printf("%d\\n", (int)cudaGetLastError());\n'
            '  printf("%d\\n", (int)cudaGetLastError());\n  return 0;\n}\n')
    status, out, err = _run(capfd, tmp_path, code)
    assert status == 0
    assert out.split() == ["1", "1", "2", "2", "0"]  # invalid value, invalid value, out of memory, then cleared


@pytest.mark.parametrize("option", [["--block", "4"], ["--arg", "a=1"], ["--json"]])
def test_single_kernel_options_are_refused_for_a_program(capfd, tmp_path, option):
    status, out, err = _run(capfd, tmp_path, "int main() { return 0; }\n", *option)
    assert status == 2 and option[0] in err and "has main()" in err


def test_program_arguments_need_a_program(capfd, tmp_path):
    path = tmp_path / "k.cu"
    path.write_text("__global__ void k(int *a) { a[0] = 1; }\n")
    status = main(["run", str(path), "--backend", "reference", "--arg", "a=0", "--", "x"])
    out, err = capfd.readouterr()
    assert status == 2 and "has no main()" in err


def test_a_host_pointer_passed_to_a_kernel_is_an_illegal_address(capfd, tmp_path):
    code = ("#include <cstdio>\n__global__ void k(int *a) { a[threadIdx.x] = 1; }\n"
            "int main() { int h[4]; k<<<1, 4>>>(h);\n"
            '  printf("%s\\n", cudaGetErrorString(cudaDeviceSynchronize())); return 0; }\n')
    status, out, err = _run(capfd, tmp_path, code)
    assert status == 0 and out == "an illegal memory access was encountered\n"
    assert "argument `a` is not a device address" in err


def test_managed_memory_is_one_copy_for_host_and_device(capfd, tmp_path):
    code = ("#include <cstdio>\n__global__ void twice(int *a) { a[threadIdx.x] *= 2; }\n"
            "int main() { int *m; cudaMallocManaged(&m, 4 * sizeof(int));\n"
            "  for (int i = 0; i < 4; i++) m[i] = i + 1;\n"
            "  int h[2] = {10, 20}; cudaMemcpy(m + 2, h, sizeof h, cudaMemcpyHostToDevice);\n"
            "  twice<<<1, 4>>>(m); cudaDeviceSynchronize();\n"
            "  int back[4]; cudaMemcpy(back, m, sizeof back, cudaMemcpyDeviceToHost);\n"
            '  printf("%d %d %d %d / %d %d\\n", m[0], m[1], m[2], m[3], back[0], back[3]); return 0; }\n')
    status, out, err = _run(capfd, tmp_path, code)
    assert (status, out) == (0, "2 4 20 40 / 2 40\n"), err


def test_the_samples_helpers_report_as_the_samples_do(capfd, tmp_path):
    code = ("#include <helper_cuda.h>\n__global__ void k(int *a) { a[threadIdx.x] = 1; }\n"
            "int main(int argc, char **argv) {\n  findCudaDevice(argc, (const char **)argv);\n"
            "  int v; checkCudaErrors(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 0));\n"
            '  printf("warp %d\\n", v);\n  int *d; checkCudaErrors(cudaMalloc(&d, 16));\n'
            '  k<<<1, 4000>>>(d);\n  getLastCudaError("k failed");\n  return 0;\n}\n')
    status, out, err = _run(capfd, tmp_path, code)
    assert out == 'GPU Device 0: "qwengpu-mlx large machine" with compute capability 7.5\n\nwarp 32\n'
    assert status == 1
    assert "prog.cu(9) : getLastCudaError() CUDA error : k failed : (9) invalid configuration argument." in err
