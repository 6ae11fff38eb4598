"""Where an instruction came from: the ``.cu`` line (from PTX ``.loc``) and the PTX line.

clang's ``-gline-tables-only`` puts ``.loc FILE LINE COL`` before the instructions of
each source line and ``.file N "path"`` entries at the end of the module. The parser
gives every instruction the :class:`SourceLoc` in force where it stands, and every
error about an instruction is made by :func:`source_error`, so it reads
``vec_add.cu:12: PTX line 30: ...``: the user's own line first, the PTX line as detail.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SourceLoc", "where", "source_error"]


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
