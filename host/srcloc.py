"""Where an instruction came from: the ``.cu`` line (from PTX ``.loc``) and the PTX line.

clang's ``-gline-tables-only`` puts ``.loc FILE LINE COL`` before the instructions of
each source line and ``.file N "path"`` entries at the end of the module. The parser
gives every instruction the :class:`SourceLoc` in force where it stands, and every
error about an instruction is made by :func:`source_error`, so it reads
``vec_add.cu:12: PTX line 30: ...``: the user's own line first, the PTX line as detail.
An error about the whole kernel (its memory, registers, ROM) or a ``__shared__``
declaration is made by :func:`located`: ``vec_add.cu:3: ...``, the kernel's line or the
declaration's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SourceLoc", "where", "source_error", "located", "kernel_source", "declaration_source", "relocated"]


@dataclass(frozen=True)
class SourceLoc:
    """A source position from ``.loc``: the file as ``.file`` names it, 1-based line and column."""

    file: str
    line: int
    col: int = 0

    @property
    def name(self) -> str:
        """The file's name without its directories, as compilers print it in short form."""
        return self.file.replace("\\", "/").rsplit("/", 1)[-1]

    def __str__(self) -> str:
        return f"{self.name}:{self.line}"


def where(ptx_line: int, src: SourceLoc | None) -> str:
    """``vec_add.cu:12: PTX line 30`` (or only ``PTX line 30`` where no ``.loc`` says)."""
    return f"{src}: PTX line {ptx_line}" if src is not None else f"PTX line {ptx_line}"


def source_error(cls: type[Exception], ptx_line: int, src: SourceLoc | None, message: str) -> Exception:
    """``cls`` with the message located, and ``ptx_line``/``source`` set for programs that read them."""
    err = cls(f"{where(ptx_line, src)}: {message}")
    err.ptx_line = ptx_line  # type: ignore[attr-defined]
    err.source = str(src) if src is not None else None  # type: ignore[attr-defined]
    return err


def kernel_source(kernel) -> SourceLoc | None:
    """The kernel's own line (its first instruction's ``.loc``: the ``__global__`` line),
    where an error about the whole kernel (its memory, registers, ROM) is told."""
    return next((x.src for x in kernel.body if getattr(x, "src", None) is not None), None)


_DECLARED = r"(__shared__|__device__)[^;(]*?\b{name}\b"
_GLOBAL_FUNCTION = re.compile(r"__global__[^;{]*?\b([A-Za-z_]\w*)\s*\(")


def source_name(name: str) -> str:
    """The identifier the user wrote for a PTX variable name: ``buf`` for ``_ZZ4sumsPiE3buf``
    (a function's static), ``scratch`` for ``_ZL7scratch`` (file-local); others as they are."""
    if not name.startswith("_Z"):
        return name
    for m in re.finditer(r"(?<=[EL])(\d+)(?=[A-Za-z_])", name):  # <length><identifier> closing the name
        ident = name[m.end():]
        if len(ident) == int(m.group(1)) and re.fullmatch(r"[A-Za-z_]\w*", ident):
            return ident
    return name


def declaration_source(kernel, name: str) -> SourceLoc | None:
    """The ``.cu`` line that declares the ``__shared__`` (or ``__device__``) variable ``name`` (PTX's name, e.g.
    ``_ZZ4sumsPiE3buf`` for ``buf`` in ``sums``), read from the kernel's own file; None
    where the file or the declaration is not found."""
    src = kernel_source(kernel)
    ident = source_name(name)
    if src is None:
        return None
    try:
        lines = Path(src.file).read_text(errors="replace").splitlines()
    except OSError:
        return None
    pattern = re.compile(_DECLARED.format(name=re.escape(ident)))
    for n, text in enumerate(lines, 1):
        if pattern.search(text):
            return SourceLoc(src.file, n, 0)
    return None


def located(cls: type[Exception], kernel, message: str, *, ptx_line: int | None = None,
            name: str | None = None) -> Exception:
    """An error about the kernel as a whole (or one of its ``__shared__`` variables,
    ``name``) at the user's line: the declaration's where it is found, else the kernel's."""
    src = (declaration_source(kernel, name) if name else None) or kernel_source(kernel)
    line = ptx_line if ptx_line is not None else getattr(kernel, "line", 0)
    if src is None:
        return source_error(cls, line, None, message)
    err = cls(f"{src}: {message}")
    err.ptx_line = line  # type: ignore[attr-defined]
    err.source = str(src)  # type: ignore[attr-defined]
    return err


def _source_lines(path) -> list[str]:
    try:
        return Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return []


def relocated(err: Exception, source, kernel: str | None = None) -> Exception:
    """An error that names only a PTX line (the PTX parser's: a ``.local`` array, an
    initialized string) told at the ``__global__`` line of the kernel it is about in the
    ``.cu`` file ``source``: the one ``kernel`` names, else the one whose name the message
    holds, else the file's only kernel. ``err`` itself where none is found."""
    found = [(n, m.group(1)) for n, text in enumerate(_source_lines(source), 1)
             for m in [_GLOBAL_FUNCTION.search(text)] if m]
    text = str(err)
    pick = ([f for f in found if f[1] == kernel] if kernel else []) \
        or [f for f in found if re.search(rf"\d{f[1]}|\b{f[1]}\b", text)] or (found if len(found) == 1 else [])
    if not pick:
        return err
    src = SourceLoc(str(source), pick[0][0], 0)
    new = type(err)(f"{src}: {text}")
    new.ptx_line = getattr(err, "ptx_line", None)  # type: ignore[attr-defined]
    new.source = str(src)  # type: ignore[attr-defined]
    return new
