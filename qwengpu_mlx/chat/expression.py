"""Normal mode: an integer expression, evaluated by ready-made kernels on the GPU.

``evaluate(text, launch)`` parses the expression (``expression_parse``), checks each
operation's types, lengths, ranges and memory before anything runs, and runs one launch
per operation node through ``launch`` (the model in the chat, the reference interpreter in
tests). The rule: the model computes; the host only binds inputs, reads outputs and passes
them on. So nothing is folded (``2 + 3`` is a launch), and an inner launch's result, as
read from ``launch``, is the outer launch's input. A bare literal is its own value.

Division (``/ %``, ``imean`` and ``mean``) runs on the GPU as well: the machine's lowering turns each
division into a routine the model executes, and a divisor of 0 stops the launch there; the
evaluator turns that stop into an error that says which divisor was 0.

Floats (:class:`F32`, a float32's bits): a decimal literal is parsed to the nearest
float32; ``+ - * /`` with a float side, ``-x``, ``sqrt``, the float reductions (``sum``,
``min``, ``max`` of floats; ``mean`` of ints or floats, ``fmean`` its other name), ``@`` of
two float vectors and ``sort`` run the ``float_*.cu`` kernels, which convert an int operand
themselves, and the result is read back as bits, never computed here. ``mean`` is the
float mean because that is what a user asking for the mean of 1, 2 and 4 means
(2.3333333); C's truncated integer mean is ``imean``. Those kernels need the large machine's ROM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from numbers import Integral
from pathlib import Path
from typing import Callable

from qwengpu_mlx.core.errors import MemoryFault, QwenGpuError, ResourceError, RomError
from qwengpu_mlx.core.float32 import M32
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig
from qwengpu_mlx.core.vocab import MAX_GRID
from qwengpu_mlx.runtime import LaunchRequest, bind_request, launch

from qwengpu_mlx.chat.expression_parse import (INT_MAX, INT_MIN, Array, BinOp, ExpressionError, F32, Neg, Num,
                                               parse)
from qwengpu_mlx.chat.staging import IntsConverted, MeanOfInts, OneBlock, Staged

__all__ = ["ExpressionError", "Evaluation", "F32", "KernelJob", "evaluate", "parse", "count_launches",
           "job_request", "bind_job", "reference_launch", "KERNELS", "MAX_LAUNCHES"]

KERNELS = Path(__file__).parent / "kernels"
MAX_LAUNCHES = 32  # each launch is a model generation: a long chain would stall the chat
BLOCK = 16  # threads per thread block for the one-element-per-thread kernels
MAX_SORT = 64  # odd-even transposition: n phases of n/2 compare-swaps within the 4096-step budget
MAX_FIB = 46  # F(46) = 1836311903 is the last Fibonacci number below 2^31


@dataclass(frozen=True)
class KernelJob:
    """One launch: what the host binds (source, kernel, arguments, geometry) and reads."""

    source: Path
    kernel: str | None
    args: dict
    block: int
    grid: int
    result: str  # the output array's parameter name
    form: str  # e.g. "dot", shown to the user
    length: int | None = None  # elements of the result to read; None: a scalar (word 0)
    per_element: tuple[str, ...] = ()  # the arrays of one word per input element (what limits the length)
    floats: bool = False  # the result's words are float32 bit patterns
    staged: Staged | None = None  # its smaller launches where its one kernel outgrows the ROM (staging)


@dataclass
class Evaluation:
    value: int | list[int]
    launches: list[tuple[KernelJob, dict[str, list[int]]]] = field(default_factory=list)


# --- the kernels -------------------------------------------------------------------------

def job_request(job: KernelJob, machine: MachineConfig = DEFAULT_MACHINE, **fields) -> LaunchRequest:
    """The job as a launch request (``fields``: the backend, the check)."""
    return LaunchRequest(source=job.source, kernel=job.kernel, args=job.args, block=job.block, grid=job.grid,
                         machine=machine, **fields)


def bind_job(job: KernelJob, machine: MachineConfig = DEFAULT_MACHINE):
    """The job's bound program (arguments become memory and immediates)."""
    return bind_request(job_request(job, machine))


def reference_launch(machine: MachineConfig = DEFAULT_MACHINE) -> Callable[[KernelJob], dict[str, list[int]]]:
    """A ``launch`` for :func:`evaluate` that runs each job on the exact interpreter."""

    def run(job: KernelJob) -> dict[str, list[int]]:
        return launch(job_request(job, machine, backend="reference")).outputs

    return run


def _geometry(threads: int) -> tuple[int, int]:
    """(block, grid) for one thread per element: blocks of up to 16 threads."""
    threads = max(threads, 1)
    return min(threads, BLOCK), -(-threads // BLOCK)


def _job(source: str, form: str, args: dict, result: str, *, threads: int, kernel: str | None = None,
         length: int | None = None, geometry: tuple[int, int] | None = None,
         per_element: tuple[str, ...] = (), floats: bool = False, staged: Staged | None = None) -> KernelJob:
    block, grid = geometry or _geometry(threads)
    return KernelJob(KERNELS / source, kernel, args, block, grid, result, form, length, per_element, floats, staged)


# --- checks ------------------------------------------------------------------------------

def _kind(value) -> str:
    if isinstance(value, (int, F32)):
        return "a scalar"
    if value and isinstance(value[0], list):
        return "a matrix"
    return "a vector"


def _vector(value, what: str, column: int) -> list[int]:
    if _kind(value) != "a vector":
        raise ExpressionError(f"{what} needs a vector, got {_kind(value)} (column {column})")
    if not value:
        raise ExpressionError(f"{what} needs a non-empty vector (column {column})")
    return value


def _scalar(value, what: str, column: int) -> int | F32:
    if not isinstance(value, (int, F32)):
        raise ExpressionError(f"{what} needs a scalar, got {_kind(value)} (column {column})")
    return value


def _fits(job: KernelJob, machine: MachineConfig) -> KernelJob:
    """Memory, geometry: refuse before the launch, naming the limit."""
    words = sum(len(v) for v in job.args.values() if isinstance(v, list))
    if words > machine.mem_words:
        raise ExpressionError(_too_long(job, words, machine))
    if job.grid > MAX_GRID:
        raise ExpressionError(f"{job.form} needs {job.grid} thread blocks, the GPU runs at most {MAX_GRID}")
    return job


def _too_long(job: KernelJob, words: int, machine: MachineConfig) -> str:
    """The memory refusal, and how long the form's vectors may be on this machine.

    The longest vector follows from the machine's memory: each array in ``per_element``
    takes one word per element, the other arrays a fixed number of words."""
    message = f"the data needs {words} words, the GPU has {machine.mem_words} ({job.form})"
    if not job.per_element:
        return message
    grows = sum(len(job.args[name]) for name in job.per_element)
    longest = (machine.mem_words - (words - grows)) // len(job.per_element)
    vectors = "a vector" if len(job.per_element) == 1 else f"{len(job.per_element)} vectors"
    got = len(job.args[job.per_element[0]])
    return f"{message}: {job.form} takes {vectors} of at most {longest} elements, got {got}"


# --- the forms: each builds one KernelJob ------------------------------------------------

def _elementwise(op: str, a, b, column: int) -> KernelJob:
    """``+ - *`` on equal-length vectors; scalar with scalar runs as 1-element vectors."""
    name = {"+": "add", "-": "sub", "*": "mul"}[op]
    if isinstance(a, int) and isinstance(b, int):
        a, b = [a], [b]
        length = None
    else:
        a = _vector(a, f"'{op}'", column)
        b = _vector(b, f"'{op}'", column)
        if len(a) != len(b):
            raise ExpressionError(f"the vectors have {len(a)} and {len(b)} elements ('{op}' at column {column})")
        length = len(a)
    return _job("elementwise.cu", name, {"a": a, "b": b, "n": len(a)}, "a", threads=len(a), kernel=name,
                length=length, per_element=("a", "b"))


def _scale(k: int, v: list[int], column: int) -> KernelJob:
    v = _vector(v, "scaling", column)
    return _job("scale.cu", "scale", {"x": v, "k": k, "n": len(v)}, "x", threads=len(v), length=len(v),
                per_element=("x",))


def _negate(value, column: int) -> KernelJob:
    """``-x`` is a launch too: scaling by -1 (a scalar as a 1-element vector)."""
    if isinstance(value, int):
        return _job("scale.cu", "negate", {"x": [value], "k": -1, "n": 1}, "x", threads=1)
    job = _scale(-1, value, column)
    return replace(job, form="negate")


def _divide(op: str, a, b, column: int) -> KernelJob:
    """``/ %`` as in C: vector by vector, vector by scalar, scalar by vector, scalar by scalar.

    A scalar operand is bound as an immediate (``divide.cu``'s ``_vk``/``_kv`` kernels), so
    one vector may fill the memory; scalar by scalar divides a 1-element vector by the
    immediate (a word and a few launch tokens fewer than two 1-element vectors)."""
    name = {"/": "div", "%": "rem"}[op]
    if isinstance(b, int):
        scalar = isinstance(a, int)
        x = [a] if scalar else _vector(a, f"'{op}'", column)
        return _job("divide.cu", name, {"x": x, "k": b, "n": len(x)}, "x", threads=len(x), kernel=name + "_vk",
                    length=None if scalar else len(x), per_element=("x",))
    if isinstance(a, int):
        x = _vector(b, f"'{op}'", column)
        return _job("divide.cu", name, {"x": x, "k": a, "n": len(x)}, "x", threads=len(x), kernel=name + "_kv",
                    length=len(x), per_element=("x",))
    a, b = _vector(a, f"'{op}'", column), _vector(b, f"'{op}'", column)
    if len(a) != len(b):
        raise ExpressionError(f"the vectors have {len(a)} and {len(b)} elements ('{op}' at column {column})")
    return _job("divide.cu", name, {"a": a, "b": b, "n": len(a)}, "a", threads=len(a), kernel=name + "_vv",
                length=len(a), per_element=("a", "b"))


def _divisors(job: KernelJob) -> list[int]:
    """The divisors a division job binds (its own inputs, read back for an error message)."""
    suffix = (job.kernel or "")[-3:]
    if suffix == "_vv":
        return list(job.args["b"])
    if suffix == "_vk":
        return [job.args["k"]]
    if suffix == "_kv":
        return list(job.args["x"])
    return []


def _division_by_zero(job: KernelJob, error: QwenGpuError, op: str, column: int) -> ExpressionError | None:
    """The refusal for a division the GPU stopped because a divisor is 0; None for any other stop.

    Both backends stop the launch with a memory fault at the division's ``.cu`` line (the
    reference names it ``DivisionByZero``, the model's fault quotes the reference); a
    zero among the job's bound divisors says that this was the cause."""
    divisors = _divisors(job)
    if not isinstance(error, MemoryFault) or 0 not in divisors:
        return None
    which = "the divisor is 0" if len(divisors) == 1 else f"element {divisors.index(0)} of the divisor is 0"
    line = re.search(r"division by zero at (\S+:\d+)", str(error))
    where = f" at {line.group(1)}" if line else ""
    return ExpressionError(f"division by zero ('{op}' at column {column}): {which}; the GPU stopped the "
                           f"{job.form} launch{where}")


def _matmul(a, b, column: int) -> KernelJob:
    """``@``: dot (vector, vector) or matrix-vector product (matrix, vector)."""
    if _kind(a) == "a vector" and _kind(b) == "a vector":
        a, b = _vector(a, "'@'", column), _vector(b, "'@'", column)
        if len(a) != len(b):
            raise ExpressionError(f"the vectors have {len(a)} and {len(b)} elements ('@' at column {column})")
        return _job("dot.cu", "dot", {"a": a, "b": b, "out": [0], "n": len(a)}, "out", threads=len(a),
                    per_element=("a", "b"))
    if _kind(a) == "a matrix" and _kind(b) == "a vector" and b:
        rows, cols = len(a), len(a[0])
        if len(b) != cols:
            raise ExpressionError(f"the matrix has {cols} columns and the vector {len(b)} elements "
                                  f"('@' at column {column})")
        chunks = -(-cols // BLOCK)
        shift = (chunks - 1).bit_length()  # chunks of a row, rounded up to a power of two
        block = cols if shift == 0 else BLOCK
        args = {"m": [x for row in a for x in row], "v": b, "out": [0] * rows, "cols": cols, "shift": shift}
        return _job("matvec.cu", "matvec", args, "out", threads=0, length=rows, geometry=(block, rows << shift))
    raise ExpressionError(f"'@' needs vector @ vector or matrix @ vector, got {_kind(a)} @ {_kind(b)} "
                          f"(column {column})")


def _reduction(name: str, v: list[int]) -> KernelJob:
    n = len(v)
    if name == "sum":
        return _job("sum.cu", "sum", {"x": v, "out": [0], "n": n}, "out", threads=n, per_element=("x",))
    if name in ("min", "max"):
        return _job("minmax.cu", name, {"x": v, "out": [v[0]], "n": n}, "out", threads=n, kernel=name + "_",
                    per_element=("x",))
    return _job("argmax.cu", "argmax", {"x": v, "best": [v[0]], "where": [0], "n": n}, "where", threads=n,
                per_element=("x",))


def _imean(v: list[int], column: int) -> KernelJob:
    """``imean(v)``: sum / n truncated toward zero, both on the GPU (``mean.cu``, one block).

    The kernel sums in 32 bits like ``sum``; a wrapped sum would make a "mean" outside the
    values' own range, so a sum beyond 32 bits is refused up front (a bound on the inputs,
    as pow's, not the result: the mean itself is read from the launch)."""
    if not INT_MIN <= sum(v) <= INT_MAX:
        raise ExpressionError(f"imean: the sum of the {len(v)} elements is outside 32-bit signed integers, so the "
                              f"GPU's 32-bit sum would wrap (column {column})")
    return _job("mean.cu", "imean", {"x": v, "out": [0], "n": len(v)}, "out", threads=0,
                geometry=(min(len(v), BLOCK), 1), per_element=("x",))


def _abs(value, column: int) -> KernelJob:
    """``abs(x)``: a scalar (as a 1-element vector) or elementwise; abs(INT_MIN) wraps as -x does."""
    if isinstance(value, int):
        return _job("abs.cu", "abs", {"x": [value], "n": 1}, "x", threads=1, kernel="abs_")
    v = _vector(value, "abs", column)
    return _job("abs.cu", "abs", {"x": v, "n": len(v)}, "x", threads=len(v), kernel="abs_", length=len(v),
                per_element=("x",))


def _vector_form(name: str, v: list[int], column: int) -> KernelJob:
    n = len(v)
    if name == "prefix_sum":
        return _job("prefix_sum.cu", name, {"x": v, "carry": [0], "n": n}, "x", threads=n, length=n,
                    per_element=("x",))
    if name == "reverse":
        return _job("reverse.cu", name, {"x": v, "n": n}, "x", threads=n // 2, length=n, per_element=("x",))
    if n > MAX_SORT:
        raise ExpressionError(f"sort supports at most {MAX_SORT} elements (its n^2/2 compare steps must fit the "
                              f"GPU's step budget), got {n} (column {column})")
    block = 1 if n <= 16 else 4  # one thread writes the fewest VAL records; 4 lanes beat it past 16
    return _job("sort.cu", name, {"x": v, "n": n}, "x", threads=0, length=n, geometry=(block, 1))


def _histogram(v: list[int], bins: int, column: int, machine: MachineConfig) -> KernelJob:
    if bins < 1:
        raise ExpressionError(f"histogram needs bins >= 1, got {bins} (column {column})")
    if len(v) + bins > machine.mem_words:  # before a list of `bins` zeros is made
        raise ExpressionError(f"the data needs {len(v) + bins} words, the GPU has {machine.mem_words} (histogram)")
    bad = [x for x in v if not 0 <= x < bins]
    if bad:
        raise ExpressionError(f"histogram needs 0 <= value < bins ({bins}): {bad[0]} is not (column {column})")
    return _job("histogram.cu", "histogram", {"data": v, "hist": [0] * bins, "n": len(v)}, "hist",
                threads=len(v), length=bins)


def _pow_fits(base: int, exponent: int) -> bool:
    """A bound check on the inputs: does base^exponent stay within 32-bit signed integers?"""
    if abs(base) <= 1:
        return True
    if exponent * (abs(base).bit_length() - 1) > 31:  # |base|^e >= 2^(e * (bits - 1)) > 2^31
        return False
    limit = -INT_MIN if base < 0 and exponent % 2 else INT_MAX
    return abs(base) ** exponent <= limit


def _scalar_form(name: str, args: list[int], column: int) -> KernelJob:
    if name == "gcd":
        a, b = args
        if a in (0, INT_MIN) and b in (0, INT_MIN) and (a or b):
            raise ExpressionError(f"gcd({a}, {b}) = 2147483648 is outside 32-bit signed integers")
        return _job("gcd.cu", "gcd", {"out": [0], "a": a, "b": b}, "out", threads=1)
    if name == "fib":
        (n,) = args
        if not 0 <= n <= MAX_FIB:
            raise ExpressionError(f"fib(n) needs 0 <= n <= {MAX_FIB} (fib({MAX_FIB + 1}) is outside 32-bit signed "
                                  f"integers), got {n} (column {column})")
        return _job("fib.cu", "fib", {"out": [0], "n": n}, "out", threads=1)
    base, exponent = args
    if exponent < 0:
        raise ExpressionError(f"pow needs an exponent >= 0 (integers only), got {exponent} (column {column})")
    if not _pow_fits(base, exponent):
        raise ExpressionError(f"pow({base}, {exponent}) is outside 32-bit signed integers (column {column})")
    return _job("pow.cu", "pow", {"out": [0], "base": base, "e": exponent}, "out", threads=1, kernel="pow_")


# --- float32: each operation a float kernel; the host binds and reads bit patterns ----------

def is_float(value) -> bool:
    """A float32 scalar, or a vector of them."""
    return isinstance(value, F32) or (isinstance(value, list) and bool(value) and isinstance(value[0], F32))


def _words(value: list) -> list:
    """A vector as launch arguments: a float as PTX spells its bits (``0f40200000``), which
    the binding takes as those bits (no decimal is re-read); an int as itself."""
    return [f"0f{x.bits:08X}" if isinstance(x, F32) else x for x in value]


def _integers(value, what: str, column: int):
    """Refuse a float where a form computes in integers only."""
    if is_float(value):
        raise ExpressionError(f"{what} takes integers only, got a float (column {column}); floats take + - * /, "
                              f"@, sqrt, sum, mean, min, max and sort")
    return value


def _float_operands(op: str, a, b, column: int) -> tuple[list, list, int | None]:
    """Both sides as equal-length vectors; a scalar beside a vector is repeated (binding,
    not computing: each element is the same value). Length None: scalar op scalar."""
    if _kind(a) == "a scalar" and _kind(b) == "a scalar":
        return [a], [b], None
    n = len(_vector(b if _kind(a) == "a scalar" else a, f"'{op}'", column))
    a = [a] * n if _kind(a) == "a scalar" else _vector(a, f"'{op}'", column)
    b = [b] * n if _kind(b) == "a scalar" else _vector(b, f"'{op}'", column)
    if len(a) != len(b):
        raise ExpressionError(f"the vectors have {len(a)} and {len(b)} elements ('{op}' at column {column})")
    return a, b, n


def _float_binop(op: str, a, b, column: int) -> KernelJob:
    """``+ - * /`` where a side is a float: ``float_elementwise.cu``'s _ff/_fi/_if kernel,
    which converts an int side itself ((float), on the GPU) and writes into the float side."""
    if op not in "+-*/":
        raise ExpressionError(f"'{op}' takes integers only, got a float (column {column}); floats take + - * /")
    a, b, length = _float_operands(op, a, b, column)
    name = {"+": "add", "-": "sub", "*": "mul", "/": "div"}[op]
    left, right = ("f" if is_float(a) else "i"), ("f" if is_float(b) else "i")
    result = "a" if left == "f" else "b"
    staged = OneBlock("div_ff_block", ("a", "b")) if name == "div" else None
    if left != right:  # the int side converted by its own launch, then the float-only kernel
        staged = IntsConverted("b" if left == "f" else "a", f"{name}_ff", "a", _to_float, staged)
    return _job("float_elementwise.cu", f"float {name}", {"a": _words(a), "b": _words(b), "n": len(a)}, result,
                threads=len(a), kernel=f"{name}_{left}{right}", length=length, per_element=("a", "b"), floats=True,
                staged=staged)


def _float_negate(value, column: int) -> KernelJob:
    """``-x`` of a float: neg.f32 flips the sign bit on the GPU."""
    scalar = isinstance(value, F32)
    x = [value] if scalar else _vector(value, "negation", column)
    return _job("float_elementwise.cu", "float negate", {"x": _words(x), "n": len(x)}, "x", threads=len(x),
                kernel="neg_f", length=None if scalar else len(x), per_element=("x",), floats=True)


def _sqrt(value, column: int) -> KernelJob:
    """``sqrt(x)``: sqrtf, correctly rounded (sqrt.rn.f32) on the GPU; of ints, converted there."""
    scalar = _kind(value) == "a scalar"
    x = [value] if scalar else _vector(value, "sqrt", column)
    length = None if scalar else len(x)
    if is_float(x):
        return _job("float_sqrt.cu", "sqrt", {"x": _words(x), "n": len(x)}, "x", threads=len(x), kernel="sqrt_f",
                    length=length, per_element=("x",), floats=True)
    return _job("float_sqrt.cu", "sqrt", {"x": x, "out": ["0f00000000"] * len(x), "n": len(x)}, "out",
                threads=len(x), kernel="sqrt_i", length=length, per_element=("x", "out"), floats=True)


def _float_reduction(name: str, v: list, column: int) -> KernelJob:
    """``sum``/``mean`` of floats (one thread, in index order) and ``mean`` of ints: the float
    mean, (float)sum / (float)n (the int sum exact, refused beyond 32 bits). ``fmean`` is
    ``mean``'s other name (the form shown is the name the call used)."""
    out = ["0f00000000"]
    if is_float(v):
        kernel = "sum_f" if name == "sum" else "mean_f"
        return _job("float_reduce.cu", name, {"x": _words(v), "out": out, "n": len(v)}, "out", threads=0,
                    kernel=kernel, geometry=(1, 1), per_element=("x",), floats=True)
    if not INT_MIN <= sum(v) <= INT_MAX:
        raise ExpressionError(f"{name}: the sum of the {len(v)} elements is outside 32-bit signed integers, so the "
                              f"GPU's 32-bit sum would wrap (column {column})")
    return _job("float_reduce.cu", name, {"x": v, "sum": [0], "out": out, "n": len(v)}, "out", threads=0,
                kernel="mean_i", geometry=(min(len(v), BLOCK), 1), per_element=("x",), floats=True,
                staged=MeanOfInts(lambda x: _reduction("sum", x), _to_float,
                                  lambda total, n: _float_binop("/", total, n, column)))


def _float_dot(a, b, column: int) -> KernelJob:
    """``@`` of two float vectors: ``float_reduce.cu``'s dot_f, one fma per element in index order."""
    if _kind(a) != "a vector" or _kind(b) != "a vector" or not (is_float(a) and is_float(b)):
        raise ExpressionError(f"'@' of floats takes two float vectors, got {_kind(a)} @ {_kind(b)} (column "
                              f"{column}); write integers as floats (1.0) to take their float dot product")
    a, b = _vector(a, "'@'", column), _vector(b, "'@'", column)
    if len(a) != len(b):
        raise ExpressionError(f"the vectors have {len(a)} and {len(b)} elements ('@' at column {column})")
    return _job("float_reduce.cu", "float dot", {"a": _words(a), "b": _words(b), "out": ["0f00000000"],
                "n": len(a)}, "out", threads=0, kernel="dot_f", geometry=(1, 1), per_element=("a", "b"), floats=True)


def _to_float(v: list[int]) -> KernelJob:
    """Ints as float32, converted on the GPU (``to_float``: cvt.rn.f32.s32, in place)."""
    return _job("float_elementwise.cu", "float conversion", {"x": list(v), "n": len(v)}, "x", threads=len(v),
                kernel="to_float", length=len(v), per_element=("x",), floats=True)


def _float_vector_form(name: str, v: list, column: int) -> KernelJob:
    """``min``/``max`` of floats (fminf/fmaxf folded by one thread) and ``sort`` of floats
    (``float_sort.cu``, the integer sort's phases with a float comparison)."""
    n = len(v)
    if name in ("min", "max"):
        return _job("float_reduce.cu", name, {"x": _words(v), "out": ["0f00000000"], "n": n}, "out", threads=0,
                    kernel=f"{name}_f", geometry=(1, 1), per_element=("x",), floats=True)
    if n > MAX_SORT:
        raise ExpressionError(f"sort supports at most {MAX_SORT} elements (its n^2/2 compare steps must fit the "
                              f"GPU's step budget), got {n} (column {column})")
    return _job("float_sort.cu", name, {"x": _words(v), "n": n}, "x", threads=0, kernel="sort_f", length=n,
                geometry=(1 if n <= 16 else 4, 1), floats=True)


def _float_call(name: str, args: list, column: int) -> KernelJob | None:
    """The float form of a call, or None when the call computes in integers."""
    if name == "sqrt":
        return _sqrt(args[0], column)
    if name in ("mean", "fmean") or (name == "sum" and is_float(args[0])):
        return _float_reduction(name, _vector(args[0], name, column), column)
    if name in ("min", "max", "sort") and is_float(args[0]):
        return _float_vector_form(name, _vector(args[0], name, column), column)
    for arg in args:
        _integers(arg, name, column)
    return None


ARITY = {"sum": 1, "min": 1, "max": 1, "argmax": 1, "mean": 1, "fmean": 1, "imean": 1, "sqrt": 1, "prefix_sum": 1,
         "sort": 1, "reverse": 1, "histogram": 2, "abs": 1, "gcd": 2, "fib": 1, "pow": 2}


def _call_job(name: str, args: list, column: int, machine: MachineConfig) -> KernelJob:
    """The job of a function call, after its arity and argument types are checked."""
    if len(args) != ARITY[name]:
        raise ExpressionError(f"{name} takes {ARITY[name]} argument{'s' * (ARITY[name] > 1)}, got {len(args)} "
                              f"(column {column})")
    floating = _float_call(name, args, column)
    if floating:
        return floating
    if name in ("sum", "min", "max", "argmax"):
        return _reduction(name, _vector(args[0], name, column))
    if name == "imean":
        return _imean(_vector(args[0], name, column), column)
    if name == "abs":
        return _abs(args[0], column)
    if name in ("prefix_sum", "sort", "reverse"):
        return _vector_form(name, _vector(args[0], name, column), column)
    if name == "histogram":
        return _histogram(_vector(args[0], name, column), _scalar(args[1], "histogram's bins", column), column,
                          machine)
    return _scalar_form(name, [_scalar(a, name, column) for a in args], column)


# --- evaluation --------------------------------------------------------------------------

def count_launches(node) -> int:
    """Operation nodes in the tree: each one is a launch."""
    if isinstance(node, Num):
        return 0
    if isinstance(node, Array):
        return sum(count_launches(i) for i in node.items)
    if isinstance(node, Neg):
        return 1 + count_launches(node.operand)
    if isinstance(node, BinOp):
        return 1 + count_launches(node.left) + count_launches(node.right)
    return 1 + sum(count_launches(a) for a in node.args)


def _array_value(items: list, column: int):
    """A bracketed list: scalars make a vector, equal-length vectors a matrix."""
    kinds = {_kind(i) for i in items}
    if not items or kinds == {"a scalar"}:
        if len({isinstance(i, F32) for i in items}) > 1:
            raise ExpressionError(f"an array mixes integers and floats; write every element as a float (2.0) "
                                  f"(column {column})")
        return list(items)
    if kinds == {"a vector"}:
        lengths = {len(i) for i in items}
        if 0 in lengths:
            raise ExpressionError(f"a matrix row is empty (column {column})")
        if len(lengths) > 1:
            raise ExpressionError(f"the matrix rows have different lengths {sorted(lengths)} (column {column})")
        return [list(i) for i in items]
    if "a matrix" in kinds:
        raise ExpressionError(f"arrays nest at most two deep (a matrix of rows) (column {column})")
    raise ExpressionError(f"an array mixes numbers and vectors (column {column})")


class _Evaluator:
    """Walks the tree bottom-up; every operation node becomes one checked launch."""

    def __init__(self, launch, machine: MachineConfig):
        self.launch = launch
        self.machine = machine
        self.launches: list[tuple[KernelJob, dict[str, list[int]]]] = []

    def value(self, node):
        if isinstance(node, Num):
            return node.value
        if isinstance(node, Array):
            return _array_value([self.value(i) for i in node.items], node.column)
        if isinstance(node, Neg):
            operand = self.value(node.operand)
            return self.run(_float_negate(operand, node.column) if is_float(operand) else _negate(operand, node.column))
        if isinstance(node, BinOp):
            job = self.binop_job(node.op, self.value(node.left), self.value(node.right), node.column)
            return self.run(job, (node.op, node.column))
        return self.run(_call_job(node.name, [self.value(a) for a in node.args], node.column, self.machine))

    @staticmethod
    def binop_job(op: str, a, b, column: int) -> KernelJob:
        if (is_float(a) or is_float(b)) and op == "@":
            return _float_dot(a, b, column)
        if is_float(a) or is_float(b):
            return _float_binop(op, a, b, column)
        if op in ("/", "%"):
            return _divide(op, a, b, column)
        if op == "@":
            return _matmul(a, b, column)
        if op == "*" and isinstance(a, int) and not isinstance(b, int) and _kind(b) == "a vector":
            return _scale(a, b, column)
        if op == "*" and isinstance(b, int) and not isinstance(a, int) and _kind(a) == "a vector":
            return _scale(b, a, column)
        return _elementwise(op, a, b, column)

    def run(self, job: KernelJob, operator: tuple[str, int] | None = None):
        """Launch ``job`` and read its result from the launch's outputs (never recompute it).

        ``operator``: the (symbol, column) of the binary operator the job runs, for a
        division by zero's message."""
        job = _fits(job, self.machine)
        try:
            outputs = self.launch(job)
        except RomError as e:
            staged = self.staged(job, operator)
            if staged is None:
                raise ExpressionError(_too_large(job, e, self.machine)) from e
            return staged
        except ResourceError as e:
            raise ExpressionError(_too_large(job, e, self.machine)) from e
        except QwenGpuError as e:
            zero = _division_by_zero(job, e, *operator) if operator else None
            raise (zero or ExpressionError(f"the {job.form} launch failed: {e}")) from e
        array = outputs.get(job.result) if isinstance(outputs, dict) else None
        needed = 1 if job.length is None else job.length
        if not isinstance(array, list) or len(array) < needed:
            raise ExpressionError(f"the {job.form} launch returned no {job.result!r} of {needed} words")
        words = array[:needed]
        if not all(isinstance(x, Integral) for x in words):
            raise ExpressionError(f"the {job.form} launch returned {job.result!r} words that are not integers")
        self.launches.append((job, outputs))
        word = (lambda x: F32(int(x) & M32)) if job.floats else int
        return word(words[0]) if job.length is None else [word(x) for x in words]


    def staged(self, job: KernelJob, operator: tuple[str, int] | None):
        """A job that outgrew the machine's ROM, run as its smaller launches (``job.staged``,
        ``staging``); None for a job with no smaller form, or none that fits (its refusal stands)."""
        return None if job.staged is None else job.staged.value(job, lambda j: self.run(j, operator), self.machine)


def _too_large(job: KernelJob, error: ResourceError, machine: MachineConfig) -> str:
    """The refusal of a kernel that does not fit the machine's program ROM: float kernels
    are long (an add ~20 blocks, a division ~32), most need the large machine."""
    if not isinstance(error, RomError) or machine.rom_blocks >= 128:
        return f"the {job.form} launch failed: {error}"
    return (f"the {job.form} kernel does not fit this GPU's program memory ({machine.rom_blocks} blocks): float "
            f"operations need the large machine (start the chat with --machine large); {error}")


def evaluate(text: str, launch: Callable[[KernelJob], dict[str, list[int]]],
             machine: MachineConfig = DEFAULT_MACHINE) -> Evaluation:
    """Parse, check and run ``text``, one launch per operation; ExpressionError if refused."""
    tree = parse(text)
    launches = count_launches(tree)
    if launches > MAX_LAUNCHES:
        raise ExpressionError(f"the expression needs {launches} launches, at most {MAX_LAUNCHES} are allowed")
    ev = _Evaluator(launch, machine)
    value = ev.value(tree)
    if _kind(value) == "a matrix":
        raise ExpressionError("the result is a matrix; a matrix can only be multiplied with a vector (m @ v)")
    return Evaluation(value, ev.launches)
