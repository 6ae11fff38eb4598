"""The tools Qwen is offered, in the OpenAI/Qwen JSON-schema form its chat template renders.

Normal mode offers :data:`GPU_EVAL` (an integer or float expression, ``chat.expression``), advanced
mode :data:`GPU_KERNEL` (a CUDA kernel with its arguments and geometry). A tool's answer
goes back as the tool message's content: :func:`result_text` for a value,
:func:`error_text` for a refusal, so the model can read either and say why.

The expression language (the ``expression`` argument of ``gpu_eval``)::

    expr    := term (("+" | "-") term)*
    term    := factor (("*" | "/" | "%" | "@") factor)*     left to right, as in C
    factor  := "-"? (INT | FLOAT | array | call | "(" expr ")")     FLOAT: 2.5, 1e-3
    array   := "[" (expr ("," expr)*)? "]"          vectors; a list of vectors is a matrix
    call    := NAME "(" expr ("," expr)* ")"
    NAME    := sum | min | max | argmax | mean | fmean | imean | sqrt | prefix_sum
             | sort | reverse | histogram | abs | gcd | fib | pow

``a @ b``: dot product (vector, vector) or matrix-vector product (matrix, vector);
``+ - *``: elementwise on equal-length vectors, or scalar with scalar; ``k * v`` and
``v * k``: scaling; ``/ %``: C's integer division and remainder (the quotient truncated
toward zero, the remainder with the dividend's sign), elementwise on equal-length
vectors, a vector by a scalar, a scalar by each element of a vector, or scalar by
scalar; a divisor of 0 stops the launch and comes back as an error naming it;
``imean(v)``: the integer mean, sum / n truncated toward zero (refused when the sum
leaves 32 bits); ``abs(x)``: a scalar or elementwise; ``histogram(v, bins)``: counts of
each value in ``[0, bins)``; ``gcd(a, b)``, ``fib(n)``, ``pow(b, e)``: scalars. All values are 32-bit
signed integers and wrap as in CUDA (``-2147483648 / -1`` and ``abs(-2147483648)`` are
-2147483648). Vectors are as long as the GPU's memory allows; a longer one is refused
with the form's longest length on this machine.

Floats: a decimal literal (``2.5``, ``1e-3``) is the nearest float32; ``+ - * /`` with a
float on either side run float kernels (an int side converted by the kernel, a scalar
beside a vector repeated), as do ``-x``, ``sqrt(x)`` (of ints too), ``sum`` of a float
vector (added in index order) and ``mean(v)``: the float mean, of ints too, since "the
mean of 1, 2 and 4" means 2.3333333 (``fmean`` is another name for it). A float result is
the float32 the GPU computed, written as the shortest decimal that reads back as it, as
``run`` prints a float (``mean([1, 2, 4])`` is 2.3333333, ``mean([2, 4, 6])`` is 4.0: a
float, so written with its point). Float kernels are long: on the published machine's
32-block ROM a float operation on ints runs as two launches (the ints converted,
then the float kernel), ``mean`` of ints as three (the sum, the conversion, the division)
and a division one block at a time; the large machine runs each as one kernel.
"""

from __future__ import annotations

import json

from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, MachineConfig

MODES = ("normal", "advanced")  # normal: gpu_eval (an expression); advanced: gpu_kernel (CUDA)
GPU_EVAL_NAME = "gpu_eval"
GPU_KERNEL_NAME = "gpu_kernel"

GPU_EVAL = {
    "type": "function",
    "function": {
        "name": GPU_EVAL_NAME,
        "description": ("Compute an integer or float expression exactly on the GPU inside this model. Supports "
                        "vectors [1, 2, 3], matrices [[1, 2], [3, 4]], + - * (elementwise or by a scalar), "
                        "/ and % (C integer division and remainder: truncated toward zero; elementwise or "
                        "by a scalar), @ (dot or matrix-vector product), and sum, min, max, argmax, abs, "
                        "prefix_sum, sort, reverse, histogram(v, bins), gcd(a, b), fib(n), pow(b, e), "
                        "imean(v) (integer mean) on 32-bit integers; mean(v): the float mean (of integers "
                        "too: mean([1, 2, 4]) is 2.3333333); floats (2.5, 1e-3: float32) with + - * /, "
                        "sqrt(x), sum, min, max, sort."),
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string",
                                          "description": ("for example: [1, 2, 3] @ [4, 5, 6] or "
                                                          "sum([4, 8, 15]) % 5")}},
            "required": ["expression"],
        },
    },
}

def kernel_tool(machine: MachineConfig = PUBLISHED_MACHINE) -> dict:
    """``gpu_kernel`` as offered on ``machine``: its description and its ``block`` bound state
    that machine's limits, so that a model whose circuit is the large machine is not told the
    published machine's 16 threads and 126 words (nor a published one 32 threads). A kernel
    sees CUDA's 32-lane warp (``host/prelude.h``), whatever the machine's own warps."""
    m = machine
    return {
        "type": "function",
        "function": {
            "name": GPU_KERNEL_NAME,
            "description": ("Compile a CUDA __global__ kernel and launch it on the GPU inside this model "
                            f"(warpSize 32, at most {m.max_block_dim} threads per block, {m.mem_words} words of "
                            "memory, 32-bit integers). Returns every pointer argument's array after the launch, "
                            "or the compiler's errors."),
            "parameters": {
                "type": "object",
                "properties": {
                    "source": {"type": "string", "description": "the CUDA source with one __global__ kernel"},
                    "args": {"type": "object", "description": ("each parameter's value by name: a list of "
                                                               "integers for a pointer, an integer otherwise")},
                    "block": {"type": "integer", "description": f"threads per block (1-{m.max_block_dim})"},
                    "grid": {"type": "integer", "description": "blocks (default 1)"},
                },
                "required": ["source", "args", "block"],
            },
        },
    }


def tools_for(machine: MachineConfig) -> dict[str, list[dict]]:
    """The tools offered per mode to a model whose circuit is ``machine``."""
    return {"normal": [GPU_EVAL], "advanced": [kernel_tool(machine)]}


GPU_KERNEL = kernel_tool(PUBLISHED_MACHINE)

TOOLS = {"normal": [GPU_EVAL], "advanced": [GPU_KERNEL]}


def result_text(value) -> str:
    """A computed value as the tool's response: ``32``, ``[5, 7, 9]`` or ``{"out": [...]}``."""
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_number(v) for v in value) + "]"
    return _number(value)


def _number(value) -> str:
    """An int as itself; a float32 (``expression.F32``, anything not an int) as its own
    text, the shortest decimal that reads back as the GPU's float32."""
    return str(int(value)) if isinstance(value, int) else str(value)


def error_text(message: str) -> str:
    """A refusal as the tool's response: the model reads why and can say so or retry."""
    return f"error: {message}"
