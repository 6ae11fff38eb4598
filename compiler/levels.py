"""Numeric levels of the circuit: the constants every gate and memory head is sized by.

See docs/CIRCUIT.md ("Levels"). A circuit token carries ``ONE = K`` in the ``ONE`` dim
and bits at level 1; layer norms restore these units, so a gate's weights are written
in bits. A host model's activations inflate the RMS and shrink every normalised value
by the signal ratio r; thresholds are written against constants that shrink alike
(``ResidualLayout.scale_class``), and the gain keeps the clamp pair saturated down to
r of about 0.37.
"""

from __future__ import annotations

from dataclasses import dataclass

SILU_LINEAR = 17.33  # silu(g) == g exactly in float32 for g >= this (NUMERICS.md)
SILU_ZERO = -88.0001  # silu(g) == 0 exactly for g <= this


@dataclass(frozen=True)
class Levels:
    K: float = 2.0**24  # value of the ONE dim in circuit token embeddings
    delta: float = 4096.0  # clamp-pair width: output = (silu(g1) - silu(g2)) / delta
    value_level: float = 64.0  # pre-SiLU level of a stored bit (stays >= 17.33 down to r^3 = 0.27)
    key_level: float = 64.0  # pre-norm level of a one-hot key/query entry
    beta_logit: float = 64.0  # in_proj_b output on circuit tokens (beta = 1 needs >= 17.33)
    z_level: float = 64.0  # in_proj_z output (silu(z) = z for z >= 17.33)
    dt_bias: float = -30.0  # with in_proj_a = 0 and A_log = 0: decay g = 1.0 exactly
    decode_gain: float = 128.0  # query weight of an address digit: a head's SiLU decodes the address
    gain_exponent: int = 15  # gate gain A = 2^15: a power of two keeps A * weight exact

    @property
    def gain(self) -> float:
        """Gate gain A.

        A gate's inputs (MLP-written bits, level r^3 after the norm) and its threshold
        scale alike, but its clamp offsets D/2 come from ONE (level r). T = 0 needs
        g1 = -A r^3 / 2 + D r / 2 <= -88 and T = 1 needs g2 >= 17.33, which hold for
        signal ratios r down to about 0.37 at A = 2^15, D = 2^12.
        """
        return 2.0 ** self.gain_exponent

    def norm_weight(self, hidden: int) -> float:
        """RMSNorm weight that maps a circuit residual back to bit units (r = 1)."""
        return self.K / hidden**0.5


DEFAULT_LEVELS = Levels()
