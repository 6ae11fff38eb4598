"""A program's device side, apart from any launch: its memory (allocation, bytes in words),
its ``__device__``/``__constant__`` variables' initial bytes, and telling a program
(``main()``) from a kernel file. Expected values are written from CUDA's meaning."""

from __future__ import annotations

import struct

import pytest

from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
from qwengpu_mlx.host.program_build import has_main
from qwengpu_mlx.host.program_memory import DeviceMemory, DeviceMemoryError
from qwengpu_mlx.host.program_symbols import split_initializers


def test_null_is_never_allocated_and_allocations_do_not_overlap():
    mem = DeviceMemory(PUBLISHED_MACHINE)
    a, b, c = mem.allocate(5), mem.allocate(4), mem.allocate(1)
    assert 0 not in (a, b, c)
    spans = sorted((x, x + 8 if x == a else x + 4) for x in (a, b, c))
    assert all(s[1] <= t[0] for s, t in zip(spans, spans[1:]))
    assert all(x % 4 == 0 for x in (a, b, c))


def test_allocation_beyond_memory_is_cuda_out_of_memory():
    mem = DeviceMemory(PUBLISHED_MACHINE)
    with pytest.raises(DeviceMemoryError) as e:
        mem.allocate(4 * PUBLISHED_MACHINE.mem_words)  # word 0 is NULL's: one word short
    assert e.value.code == 2
    whole = mem.allocate(4 * (PUBLISHED_MACHINE.mem_words - 1))
    assert whole == 4 and mem.free_bytes() == 0
    mem.free(whole)
    assert mem.free_bytes() == 4 * (PUBLISHED_MACHINE.mem_words - 1)


def test_free_of_an_unknown_pointer_is_invalid_value():
    mem = DeviceMemory(PUBLISHED_MACHINE)
    p = mem.allocate(8)
    with pytest.raises(DeviceMemoryError) as e:
        mem.free(p + 4)
    assert e.value.code == 1


def test_bytes_are_little_endian_words_and_ranges_are_checked():
    mem = DeviceMemory(PUBLISHED_MACHINE)
    p = mem.allocate(12)
    mem.write(p, struct.pack("<3i", 1, -2, 0x01020304))
    assert mem.words[p // 4: p // 4 + 3] == [1, 0xFFFFFFFE, 0x01020304]
    mem.write(p + 1, b"\xaa\xbb")  # inside the first word, as cudaMemset of 2 bytes at p+1
    assert mem.words[p // 4] == 0x00BBAA01
    assert mem.read(p + 4, 4) == struct.pack("<i", -2)
    mem.check_range(p, 12, "copy")
    with pytest.raises(DeviceMemoryError):
        mem.check_range(p + 4, 12, "copy")


def test_shared_scratch_takes_the_highest_free_words():
    mem = DeviceMemory(PUBLISHED_MACHINE)
    mem.allocate(16)
    assert mem.scratch(3) == PUBLISHED_MACHINE.mem_words - 3
    assert mem.scratch(PUBLISHED_MACHINE.mem_words) is None


PTX = """
.visible .global .align 4 .u32 counter = 5;
.visible .global .align 4 .b8 zeros[12];
.visible .const .align 4 .b8 table[8] = {1, 0, 0, 0, 255, 255, 255, 255};
.visible .const .align 4 .u32 pair[2] = {7, -3};
.visible .entry k(.param .u64 k_param_0)
{
\tmov.u64 %rd1, table;
\tld.const.u32 %r1, [%rd1];
}
"""


def test_initializers_are_taken_out_with_their_bytes():
    text, variables = split_initializers(PTX)
    by_name = {v.name: v for v in variables}
    assert by_name["counter"].initial == struct.pack("<i", 5)
    assert by_name["zeros"].initial == bytes(12)
    assert by_name["table"].initial == struct.pack("<2i", 1, -1) and by_name["table"].constant
    assert by_name["pair"].initial == struct.pack("<2i", 7, -3)
    assert "=" not in text.split(".visible .entry")[0]
    assert ".const" not in text and "ld.global.u32" in text


def test_main_tells_a_program_from_a_kernel_file(tmp_path):
    program = tmp_path / "p.cu"
    program.write_text("__global__ void k(int *a) {}\nint main(int argc, char **argv) {\n  return 0;\n}\n")
    kernel = tmp_path / "k.cu"
    kernel.write_text("// int main() { } in a comment\n__global__ void k(int *a) { a[0] = 1; }\n")
    assert has_main(program) and not has_main(kernel)
