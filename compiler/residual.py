"""Named residual-stream subspaces, allocated in one place.

Every part of the circuit asks this allocator for its dims by name (``"slot0.a"``,
``"rom.piece3"``); nothing else in the compiler picks indices. ``describe()`` is what
``compile --emit layout`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Subspace:
    name: str
    start: int
    width: int

    @property
    def dims(self) -> np.ndarray:
        return np.arange(self.start, self.start + self.width)

    def __getitem__(self, i: int) -> int:
        if not -self.width <= i < self.width:
            raise IndexError(f"{self.name}[{i}] outside width {self.width}")
        return self.start + (i % self.width)

    def __len__(self) -> int:
        return self.width


@dataclass
class ResidualLayout:
    """Allocates residual dims. Dim 0 is ``ONE``, the constant every gate is relative to."""

    hidden: int
    spaces: dict[str, Subspace] = field(default_factory=dict)
    _next: int = 0

    def __post_init__(self):
        self.ONE = self.alloc("ONE", 1)[0]

    def alloc(self, name: str, width: int) -> Subspace:
        if name in self.spaces:
            raise ValueError(f"residual subspace {name!r} allocated twice")
        if self._next + width > self.hidden:
            raise ValueError(f"residual full: {name!r} needs {width} dims, "
                             f"{self.hidden - self._next} of {self.hidden} left")
        s = Subspace(name, self._next, width)
        self.spaces[name] = s
        self._next += width
        return s

    def __getitem__(self, name: str) -> Subspace:
        return self.spaces[name]

    @property
    def used(self) -> int:
        return self._next

    def describe(self) -> str:
        return "\n".join(f"{s.start:5d}..{s.start + s.width - 1:5d}  {s.name}" for s in self.spaces.values())
