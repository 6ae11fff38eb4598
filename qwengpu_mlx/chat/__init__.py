"""``qwengpu-mlx chat``: Qwen asks for the GPU in its own tool-call format, the launch runs
in the same model, and Qwen answers with the number read from the recurrent state.

* ``tools``: the two tools' schemas (normal: an expression; advanced: a CUDA kernel) and
  how a result or an error goes back to the model as the tool's response;
* ``expression``: the normal mode's expression language, each form a ready-made kernel;
* ``session``: the chat loop (text generation, tool calls, launches, summaries).
"""
