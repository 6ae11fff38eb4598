"""The splice's refusals, as one tuple the CLI catches (each is a ValueError with a message)."""

from __future__ import annotations

from .build import SpliceMisfit, SpliceTooLarge
from .logits import SuppressionError
from .runner import CombinedCheckpointError
from .source import BaseSourceError
from .tokenizer import TokenizerExtensionError
from .quantized import QuantizedBaseError

SPLICE_ERRORS = (SpliceMisfit, SpliceTooLarge, SuppressionError, QuantizedBaseError, BaseSourceError,
                 TokenizerExtensionError, CombinedCheckpointError)
