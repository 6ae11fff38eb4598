"""Errors a user can meet. Each names the construct and the limit it broke."""


class QwenGpuError(Exception):
    """Base class: printed by the CLI as ``error: <message>``, with exit status
    :attr:`exit_status`: 2 for a usage error (arguments, paths, options), 1 for a kernel
    that cannot be compiled or run and a launch that fails, as compilers do."""

    exit_status: int = 2

    ptx_line: int | None = None
    """The PTX line an error about one instruction names (``host.srcloc.source_error``)."""
    source: str | None = None
    """Its ``.cu`` line as ``file.cu:LINE``, where the PTX carries line tables."""


class FrontendError(QwenGpuError):
    """CUDA could not be turned into PTX (clang missing, syntax error, no such kernel)."""

    exit_status = 1


class ClangNotFound(FrontendError):
    pass


class UnsupportedError(QwenGpuError):
    """The kernel uses a construct the machine does not have (floats, 64-bit math, div)."""

    exit_status = 1


class ResourceError(QwenGpuError):
    """The kernel does not fit the machine (registers, ROM, memory, launch geometry)."""

    exit_status = 1


class RomError(ResourceError):
    """The kernel's machine blocks outgrow the program ROM (the lowering then asks whether
    a machine with a larger ROM would run it, and says so only if it would)."""


class LaunchError(QwenGpuError):
    """The launch's arguments do not match the kernel (missing/extra/ill-formed --arg)."""


class ExecutionError(QwenGpuError):
    """A launch went wrong while running: step budget, barrier deadlock, bad address."""

    exit_status = 1


class StepBudgetExceeded(ExecutionError):
    pass


class BarrierDeadlock(ExecutionError):
    pass


class MemoryFault(ExecutionError):
    pass


class DivisionByZero(MemoryFault):
    """A division's divisor was 0: its routine stores outside memory (both backends fault
    there, the model with ``FAULT``), and the reference names the division's ``.cu`` line."""


class TokenBudgetExceeded(ExecutionError):
    """The model wrote more tokens than a correct launch of the program can (``bound``: "step" or "launch")."""

    bound = "launch"


class LaunchTimeout(ExecutionError):
    """The launch ran past the caller's time bound (``run --timeout``)."""


class ModelError(QwenGpuError):
    """A model or checkpoint the command line names that cannot be opened, built or used
    (no such directory or repo, not a combined checkpoint, pickle-only weights, a base or a
    shape the circuit does not fit): a usage error."""


class OutputError(QwenGpuError):
    """An output path cannot be written: a non-empty ``--out`` without ``--force``, a file
    where a directory belongs, an unwritable place."""


class InvalidPtx(FrontendError):
    """PTX that parses but is malformed: a wrong operand count or kind, an undeclared name."""


class MalformedProgram(QwenGpuError):
    """The lowering produced a machine program that is not well-formed (an internal error)."""
