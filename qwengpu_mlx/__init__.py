"""qwengpu-mlx: a Qwen3.5 model with a SIMT GPU compiled into its weights."""

__version__ = "0.1.0"
