"""The GPU inside a real Qwen3.5 checkpoint: acquiring a base, splicing the circuit in, running both."""
