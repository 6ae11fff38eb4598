"""Numeric levels of the circuit: the constants every gate and memory head is sized by.

See docs/CIRCUIT.md ("Levels"). A circuit token carries ``ONE = K`` in the ``ONE`` dim
and bits at level 1; layer norms restore these units, so a gate's weights are written
in bits. Gains are sized so that decisions stay exact down to a signal ratio ``r_min``
(the fraction of the designed scale left when a host model's activations inflate the
RMS).
"""

from __future__ import annotations

from dataclasses import dataclass

SILU_LINEAR = 17.33  # silu(g) == g exactly in float32 for g >= this (NUMERICS.md)
SILU_ZERO = -88.0001  # silu(g) == 0 exactly for g <= this


@dataclass(frozen=True)
class Levels:
    K: float = 2.0**24  # value of the ONE dim in circuit token embeddings
    r_min: float = 0.05  # smallest signal ratio the gains are sized for
    delta: float = 4096.0  # clamp-pair width: output = (silu(g1) - silu(g2)) / delta
    value_level: float = 64.0  # pre-SiLU level of a stored bit (>= SILU_LINEAR / r_min? see key_level)
    key_level: float = 64.0  # pre-norm level of a one-hot key/query entry
    beta_logit: float = 64.0  # in_proj_b output on circuit tokens (beta = 1 needs >= 17.33)
    z_level: float = 64.0  # in_proj_z output (silu(z) = z for z >= 17.33)
    dt_bias: float = -30.0  # with in_proj_a = 0 and A_log = 0: decay g = 1.0 exactly

    @property
    def gain(self) -> float:
        """Gate gain A: T=0 gives g1 <= -88 and T=1 gives g2 >= 17.33 for r >= r_min."""
        return self.delta + 2.0 * max(-SILU_ZERO, SILU_LINEAR) / self.r_min

    def norm_weight(self, hidden: int) -> float:
        """RMSNorm weight that maps a circuit residual back to bit units (r = 1)."""
        return self.K / hidden**0.5


DEFAULT_LEVELS = Levels()
