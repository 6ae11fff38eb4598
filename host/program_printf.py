"""``printf`` in a program's kernels: each call becomes a record the kernel stores in device
memory, printed by the program's host side at its next synchronizing call, as CUDA's
printf buffer is.

clang lowers a kernel's ``printf(fmt, a, b)`` to ``vprintf(fmt, args)``: the arguments are
stored in a per-thread stack frame (``.local`` memory, ``__local_depot``), and ``vprintf``
is called with the format's address and the frame's. The machine has no local memory
and no calls, so this PTX is rewritten into what it runs (:func:`rewrite_printf`):

* the frame becomes a slice of a ``.shared`` array, one slice per thread of the block
  (``tid`` in the block times the frame's bytes): ``.local`` accesses become ``.shared``
  ones (vector stores split into words);
* the call becomes: take a record slot with ``atomicAdd`` on a counter, and store the
  format's address and the frame's words in the record (a buffer of
  :data:`RECORDS` records; when it is full, later calls print nothing, as a full CUDA
  printf buffer drops them).

The model runs these instructions like any others: the text printed is formatted on
the host from the words the kernel stored (the format string is the program's own,
in device memory), which is I/O, not a kernel result. Integer arguments of every width
are printed (``%d``, ``%ld``, ``%lld``, ``%zu``, ``%lx`` ...: a 64-bit one is two words
of the frame, ``host/wide64.py``) and pointers for ``%p``; a ``%s`` string is refused
here, at its call's line (the record holds the string's address, not its characters),
and a ``double`` argument by the translation, which has no 64-bit floats.
"""

from __future__ import annotations

import re

from qwengpu_mlx.core.errors import UnsupportedError

from qwengpu_mlx.host.srcloc import SourceLoc, source_error

COUNTER = "__qwengpu_printf_count"
BUFFER = "__qwengpu_printf_records"
RECORDS = 32
"""Records the buffer holds per launch (a record: the format's address, then the frame's words)."""

MAX_THREADS = 32
"""Frames per block: the largest machine's threads per block."""

_DEPOT_RE = re.compile(r"^\s*\.local\s+\.align\s+\d+\s+\.b8\s+(__local_depot\d+)\[(\d+)\];\s*$", re.M)
_CALL_RE = re.compile(r"\{\s*// callseq (\d+), \d+\n(.*?)\}\s*// callseq \1\n", re.S)
_EXTERN_RE = re.compile(r"\.extern\s+\.func\s+\(\.param\s+\.b32\s+func_retval0\)\s+vprintf\s*\([^)]*\)\s*;", re.S)
_VECTOR_STORE_RE = re.compile(r"st\.local\.v(\d)\.([bsu]\d+)\s+\[([^\]+]+)(?:\+(\d+))?\],\s*\{([^}]*)\};")


def uses_printf(ptx: str) -> bool:
    return re.search(r"\bvprintf\b", ptx) is not None


def record_words(ptx: str) -> int:
    """Words of one record: the format's address, then the largest frame's words."""
    frames = [int(m.group(2)) for m in _DEPOT_RE.finditer(ptx)]
    return 1 + (max(frames, default=0) + 3) // 4


def _split_vector_store(m: re.Match) -> str:
    count, typ, base, offset = int(m.group(1)), m.group(2), m.group(3).strip(), int(m.group(4) or 0)
    size = int(typ[1:]) // 8
    values = [v.strip() for v in m.group(5).split(",")]
    return "\n\t".join(f"st.local.{typ} [{base}+{offset + i * size}], {v};" for i, v in enumerate(values[:count]))


def _call_replacement(body: str, words: int, kernel_index: int, call_index: int) -> str | None:
    """The record stores for one ``vprintf`` call sequence (None: not a vprintf call)."""
    if "vprintf" not in body:
        return None
    fmt = re.search(r"st\.param\.b64\s+\[param0\+0\],\s*([^;]+);", body).group(1).strip()
    args = re.search(r"st\.param\.b64\s+\[param1\+0\],\s*([^;]+);", body).group(1).strip()
    ret = re.search(r"ld\.param\.b32\s+(%\w+),\s*\[retval0\+0\];", body)
    q = f"%qpf{kernel_index}_"
    lines = [f"atom.global.add.u32 {q}slot, [{COUNTER}], 1;",
             f"setp.lt.u32 {q}room, {q}slot, {RECORDS};",
             f"mul.wide.u32 {q}off, {q}slot, {4 * words};",
             f"mov.u64 {q}rec, {BUFFER};",
             f"add.u64 {q}rec, {q}rec, {q}off;",
             f"cvt.u32.u64 {q}word, {fmt};",
             f"@{q}room st.global.u32 [{q}rec], {q}word;"]
    if args != "0":
        for i in range(words - 1):
            lines += [f"ld.shared.u32 {q}word, [{args}+{4 * i}];",
                      f"@{q}room st.global.u32 [{q}rec+{4 + 4 * i}], {q}word;"]
    if ret:
        lines.append(f"mov.u32 {ret.group(1)}, 0;")
    return "\n\t".join(lines) + "\n"


def _rewrite_kernel(body: str, words: int, kernel_index: int) -> str:
    depot = _DEPOT_RE.search(body)
    q = f"%qpf{kernel_index}_"
    regs = (f"\t.reg .b32 {q}slot;\n\t.reg .b32 {q}word;\n\t.reg .b32 {q}t;\n\t.reg .b32 {q}ty;\n"
            f"\t.reg .b32 {q}nx;\n\t.reg .pred {q}room;\n\t.reg .b64 {q}off;\n\t.reg .b64 {q}rec;\n")
    if depot:
        name, size = depot.group(1), int(depot.group(2))
        shared = f"__qwengpu_frame{kernel_index}"
        body = body.replace(depot.group(0), f"\t.shared .align 8 .b8 {shared}[{size * MAX_THREADS}];\n{regs}")
        frame = (f"mov.u64 \\1, {shared};\n\tmov.u32 {q}t, %tid.x;\n\tmov.u32 {q}ty, %tid.y;\n"
                 f"\tmov.u32 {q}nx, %ntid.x;\n\tmad.lo.s32 {q}t, {q}ty, {q}nx, {q}t;\n"
                 f"\tmul.wide.u32 {q}off, {q}t, {size};\n\tadd.u64 \\1, \\1, {q}off;")
        body = re.sub(r"mov\.u64\s+(%\w+),\s*" + re.escape(name) + ";", frame, body)
        body = re.sub(r"cvta\.local\.u64\s+(%\w+),\s*(%\w+);", r"mov.u64 \1, \2;", body)
        body = _VECTOR_STORE_RE.sub(_split_vector_store, body)
        body = re.sub(r"\b(st|ld)\.local\.", r"\1.shared.", body)
    else:
        body = body.replace("{\n", "{\n" + regs, 1)
    calls = iter(range(1 << 30))
    return _CALL_RE.sub(lambda m: _call_replacement(m.group(2), words, kernel_index, next(calls)) or m.group(0),
                        body)


def rewrite_printf(ptx: str) -> str:
    """The PTX with every kernel's ``printf`` turned into record stores (unchanged without printf)."""
    if not uses_printf(ptx):
        return ptx
    _refuse_string_conversions(ptx)
    words = record_words(ptx)
    text = _EXTERN_RE.sub("", ptx)
    header_end = text.find(".visible .entry")
    if header_end < 0:
        header_end = text.find(".entry")
    decls = (f".global .align 4 .u32 {COUNTER};\n"
             f".global .align 4 .b8 {BUFFER}[{4 * words * RECORDS}];\n\n")
    text = text[:header_end] + decls + text[header_end:]
    pieces = re.split(r"(?=\.(?:visible\s+)?\.?entry\s)", text)
    return "".join(_rewrite_kernel(p, words, i) if re.match(r"\.(visible\s+)?\.?entry", p) else p
                   for i, p in enumerate(pieces))


_STRING_RE = re.compile(r"^\s*\.global\s+\.align\s+\d+\s+\.b8\s+(_?\$_?str\w*)\[\d+\]\s*=\s*\{([^}]*)\};", re.M)
_CONVERSION_RE = re.compile(r"%[-+ #0]*\d*(?:\.\d*)?[hlLqjzt]*([a-zA-Z%])")
_LOC_RE = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)", re.M)
_FILE_RE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', re.M)


def _refuse_string_conversions(ptx: str) -> None:
    """A format with ``%s`` is refused at the line of the first code that takes its address."""
    for m in _STRING_RE.finditer(ptx):
        text = bytes(int(b) for b in m.group(2).split(",") if b.strip()).decode("latin-1")
        if "s" not in [c.group(1) for c in _CONVERSION_RE.finditer(text)]:
            continue
        use = re.search(r"[,\s]" + re.escape(m.group(1)) + r"\s*;", ptx[m.end():])
        at = m.end() + use.start() if use else m.start()
        locs = list(_LOC_RE.finditer(ptx, 0, at))
        files = dict(_FILE_RE.findall(ptx))
        src = SourceLoc(files.get(locs[-1].group(1), "?"), int(locs[-1].group(2))) if locs else None
        raise source_error(UnsupportedError, ptx.count("\n", 0, at) + 1, src,
                           "printf's %s (a string argument) is not supported in a kernel: the record holds the "
                           "string's address, not its characters; print its characters with %c, or print the "
                           "string from the host")
