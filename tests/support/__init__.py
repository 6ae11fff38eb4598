"""What the tests share: oracles, circuits, fixtures' builders and helpers (no tests here).

``oracles`` (NumPy oracles for every example kernel), ``cli`` (clang, kernel files, the CLI in
a subprocess), ``plans`` and ``circuits`` (hand-built circuit plans), ``alu_harness`` (circuit
pieces on hand-made residual inputs), ``chat_script`` (a scripted chat model), ``qwen35_base``
and ``qwen35_chat`` (Qwen3.5's tokenizer and chat template), ``dashboard`` (driving the
dashboard), ``runner_wide`` (the wide circuit runner the compact one is checked against),
``host_front`` (a random Qwen3.5 host in front of the circuit).
"""
