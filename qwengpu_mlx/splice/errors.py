"""The splice's refusals, as one tuple the CLI catches (each is a ValueError with a message)."""

from __future__ import annotations

from qwengpu_mlx.splice.build import SpliceMisfit, SpliceTooLarge
from qwengpu_mlx.splice.logits import SuppressionError
from qwengpu_mlx.splice.combined_runner import CombinedCheckpointError
from qwengpu_mlx.splice.source import BaseSourceError
from qwengpu_mlx.splice.tokenizer import TokenizerExtensionError
from qwengpu_mlx.splice.quantized import QuantizedBaseError

SPLICE_ERRORS = (SpliceMisfit, SpliceTooLarge, SuppressionError, QuantizedBaseError, BaseSourceError,
                 TokenizerExtensionError, CombinedCheckpointError)
