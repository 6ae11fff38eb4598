"""Named residual-stream subspaces, allocated in one place.

Every part of the circuit asks this allocator for its dims by name (``"slot0.a"``,
``"rom.piece3"``); nothing else in the compiler picks indices. ``describe()`` is what
``compile --emit layout`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


BIT = (0.0, 1.0)  # ``value_range`` of a value that is 0 or 1 at every pass


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
    """Allocates residual dims.

    Dim 0 is ``ONE``, the constant K of every circuit token. A host model's activations
    shrink every normalised value by the signal ratio r, and a value written by a layer
    scales with a power of r that depends on what wrote it (``scale_class``): 0 for the
    token embedding (x = 1), 1 for layer 0's heads (x ~ r), 2 for MLPs and later heads
    (x ~ r^2). ``ONE1`` and ``ONE2`` are constant-1 dims of classes 1 and 2 (a layer-0
    head and a layer-0 MLP gate write them), so a threshold can be written against the
    constant of its inputs' class and not depend on r (docs/CIRCUIT.md, "Levels").
    """

    hidden: int
    spaces: dict[str, Subspace] = field(default_factory=dict)
    scale_class: dict[int, int] = field(default_factory=dict)
    references: dict[int, tuple[int, float]] = field(default_factory=dict)  # class -> (dim, weight)
    ranges: dict[int, tuple[float, float]] = field(default_factory=dict)  # dim -> (lo, hi) its value keeps to
    _next: int = 0

    def __post_init__(self):
        self.ONE = self.alloc("ONE", 1)[0]
        self.ONE1 = self.alloc("ONE1", 1)[0]
        self.ONE2 = self.alloc("ONE2", 1)[0]

    def reference(self, cls: int, K: float) -> tuple[int, float]:
        """(dim, weight) whose product is the constant 1 at scale class ``cls``."""
        return self.references.get(cls, (self.ONE, 1.0 / K))

    def alloc(self, name: str, width: int, *, value_range: tuple[float, float] | None = None) -> Subspace:
        """``width`` fresh dims named ``name``.

        ``value_range`` is what the builder knows about the value (``BIT``: it is 0 or 1 at
        every pass, as a one-hot selection of bits is), tighter than its writers' weights
        say; dim reuse (``compiler.reuse``) clears it with that many steps.
        """
        if name in self.spaces:
            raise ValueError(f"residual subspace {name!r} allocated twice")
        if self._next + width > self.hidden:
            raise ValueError(f"residual full: {name!r} needs {width} dims, "
                             f"{self.hidden - self._next} of {self.hidden} left")
        s = Subspace(name, self._next, width)
        self.spaces[name] = s
        if value_range is not None:
            self.claim(s.dims, *value_range)
        self._next += width
        return s

    def claim(self, dims, lo: float, hi: float) -> None:
        """Record that the value of each of ``dims`` stays in [lo, hi] (see ``alloc``)."""
        for d in dims:
            self.ranges[int(d)] = (float(lo), float(hi))

    def __getitem__(self, name: str) -> Subspace:
        return self.spaces[name]

    @property
    def used(self) -> int:
        return self._next

    def dim_names(self) -> dict[int, str]:
        """Each allocated dim's name, ``space[i]``: what a message about one dim says."""
        return {int(d): f"{sp.name}[{i}]" for sp in self.spaces.values() for i, d in enumerate(sp.dims)}

    def describe(self) -> str:
        return "\n".join(f"{s.start:5d}..{s.start + s.width - 1:5d}  {s.name}" for s in self.spaces.values())
