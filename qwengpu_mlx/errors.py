"""Errors a user can meet. Each names the construct and the limit it broke."""


class QwenGpuError(Exception):
    """Base class: printed by the CLI as ``error: <message>`` with exit status 2."""


class FrontendError(QwenGpuError):
    """CUDA could not be turned into PTX (clang missing, syntax error, no such kernel)."""


class ClangNotFound(FrontendError):
    pass


class UnsupportedError(QwenGpuError):
    """The kernel uses a construct the machine does not have (floats, 64-bit math, div)."""


class ResourceError(QwenGpuError):
    """The kernel does not fit the machine (registers, ROM, memory, launch geometry)."""


class LaunchError(QwenGpuError):
    """The launch's arguments do not match the kernel (missing/extra/ill-formed --arg)."""


class ExecutionError(QwenGpuError):
    """A launch went wrong while running: step budget, barrier deadlock, bad address."""


class StepBudgetExceeded(ExecutionError):
    pass


class BarrierDeadlock(ExecutionError):
    pass


class MemoryFault(ExecutionError):
    pass
