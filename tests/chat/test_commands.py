"""mlx_lm.chat's commands on piped input: ``q`` ends, ``r`` resets, ``h`` helps; ``--json`` as before.

The session is the real chat loop over a scripted model (``chat_script``) with the demo
model's tokenizer; stdin is a pipe of lines, as ``echo ... | qwengpu-mlx chat`` gives it.
"""

from __future__ import annotations

import io
import json


from tests.support.chat_script import ScriptedModel

from qwengpu_mlx.chat import cli as chat_cli
from qwengpu_mlx.chat.models import ChatModel
from qwengpu_mlx.chat.session import ChatSession, ChatSettings
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE

LINES = "hi\nh\nr\nhi again\nq\nnever asked\n"


def piped(monkeypatch, tokenizer, store, as_json: bool) -> tuple[ChatSession, str]:
    from qwengpu_mlx.splice.combined_runner import CombinedModel

    base = ScriptedModel(tokenizer, ["Hello."], len(tokenizer.vocab))
    model = ChatModel("scripted", CombinedModel(base, None, None, store.runner(PUBLISHED_MACHINE)), tokenizer,
                      PUBLISHED_MACHINE)
    session = ChatSession(model, ChatSettings(max_tokens=20))
    out = io.StringIO()
    monkeypatch.setattr("sys.stdin", io.StringIO(LINES))
    monkeypatch.setattr("sys.stdout", out)
    assert chat_cli._batch(session, as_json) == 0
    return session, out.getvalue()


def test_piped_commands(monkeypatch, tokenizer, store):
    session, out = piped(monkeypatch, tokenizer, store, as_json=False)
    assert out.count(">> ") == 2 and ">> hi\n" in out and ">> hi again\n" in out
    assert chat_cli.HELP + "\n" in out and chat_cli.RESET + "\n" in out
    assert out.index(chat_cli.HELP) < out.index(chat_cli.RESET) < out.index(">> hi again")
    assert "never asked" not in out  # q ended the chat
    assert [m["content"] for m in session.messages] == ["hi again", "Hello."]  # r forgot the first turn


def test_piped_commands_with_json(monkeypatch, tokenizer, store):
    _, out = piped(monkeypatch, tokenizer, store, as_json=True)
    records = [json.loads(line) for line in out.splitlines()]
    assert [r.get("user", r.get("command")) for r in records] == ["hi", "h", "r", "hi again"]
    assert records[1] == {"command": "h", "said": chat_cli.HELP}
    assert records[0]["answer"] == "Hello." and records[0]["stopped"] == "eos" and records[0]["reasoning"] == ""
