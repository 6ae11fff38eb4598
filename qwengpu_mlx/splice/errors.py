"""The splice's refusals, as one tuple the CLI catches (each is a ValueError with a message)."""

from __future__ import annotations

from .build import SpliceMisfit, SpliceTooLarge
from .logits import SuppressionError
from .weights import QuantizedBaseError


def _optional(module: str, name: str) -> tuple:
    import importlib

    try:
        return (getattr(importlib.import_module(module), name),)
    except (ImportError, AttributeError):  # pragma: no cover - the module is part of the package
        return ()


SPLICE_ERRORS = (SpliceMisfit, SpliceTooLarge, SuppressionError, QuantizedBaseError,
                 *_optional("qwengpu_mlx.splice.source", "BaseSourceError"),
                 *_optional("qwengpu_mlx.splice.tokenizer", "TokenizerExtensionError"))
