"""The answer check alone: which numbers an answer states, and which the GPU did not produce.

The cases are the misstatements seen from the demo (a digit changed, a list cut short, a
number after a tool error, an invented reason) and what a faithful answer looks like
(the result, with the question's own numbers restated around it)."""

from __future__ import annotations

from qwengpu_mlx.chat.calls import ToolOutcome
from qwengpu_mlx.chat.quoting import check_answer, stated_numbers, tool_values


def ok(content: str, expression: str) -> ToolOutcome:
    return ToolOutcome(content, False, expression=expression)


def failed(content: str, expression: str) -> ToolOutcome:
    return ToolOutcome(content, True, expression=expression)


def test_numbers_an_answer_states():
    assert stated_numbers("The GPU computed [1, -2, 3] and then 7.") == [[1, -2, 3], 7]
    assert stated_numbers("2^20 is 1,048,576, not 3.5") == [2, 20, 1048576, 3.5]
    assert stated_numbers("Qwen3 says the 15th is 610") == [610]  # numbers inside words are not stated
    assert stated_numbers("[1, 2] @ [3, 4] = 11", ["[1, 2] @ [3, 4]"]) == [11]


def test_tool_values():
    assert tool_values("531441") == [531441]
    assert tool_values("[1, 2, 3]") == [[1, 2, 3]]
    assert tool_values('{"out": [4, 5], "n": 2}') == [[4, 5], 2]
    assert tool_values("error: 3 is not (column 1)") == []


def test_a_faithful_answer_is_quoted():
    outcomes = [ok("19683", "pow(3, 9)")]
    check = check_answer("3 to the power of 9 is 19683.", outcomes, "What is 3 to the power of 9?")
    assert check.quoted and check.flag() is None and check.stated == ["3", "9", "19683"]
    assert check_answer("The GPU computed [17, 39].", [ok("[17, 39]", "[[1, 2], [3, 4]] @ [5, 6]")]).quoted
    assert check_answer("The largest, 17, is at index 1.", [ok("[5, 17]", "x"), ok("1", "y")]).quoted


def test_a_digit_changed_is_flagged_beside_the_true_value():
    check = check_answer("The GPU computed 531241.", [ok("531441", "pow(9, 6)")], "What is 9 to the 6th?")
    assert not check.quoted
    assert check.flag() == "not from the GPU: the answer states 531241, the GPU computed 531441"


def test_a_list_cut_short_is_flagged():
    check = check_answer("The GPU computed [1, 2, 4, 2].", [ok("[1, 2, 4, 4, 5]", "sort([5, 1, 4, 2, 4])")])
    assert [(m.stated, m.true) for m in check.misquotes] == [("[1, 2, 4, 2]", "[1, 2, 4, 4, 5]")]


def test_only_the_questions_numbers_is_no_quote():
    check = check_answer("The GPU computed 3.", [ok("19683", "pow(3, 9)")], "What is 3 to the power of 9?")
    assert not check.quoted and check.misquotes[0].true == "19683"


def test_a_number_after_a_tool_error():
    check = check_answer("The GPU computed 14.", [failed("error: expected ')' at column 18", "gcd(14, 3]")])
    assert not check.quoted and check.after_error
    assert "computed no value this turn (error: expected ')' at column 18)" in check.flag()


def test_an_invented_reason_after_a_tool_error():
    error = "error: gcd takes 2 arguments, got 1 (column 1)"
    check = check_answer("I could not compute that: the program does not fit in the GPU's memory.",
                         [failed(error, "gcd(1)")])
    assert check.quoted and check.misexplained and check.flag() == f"not the GPU's reason: the GPU said {error}"
    said = check_answer("The GPU said: gcd takes 2 arguments, got 1 (column 1).", [failed(error, "gcd(1)")])
    assert not said.misexplained and said.flag() is None


def test_where_the_copy_guard_holds_a_number_to_a_result():
    from qwengpu_mlx.chat.copying import continuation, result_strings

    results = result_strings(["2187", "[11, 40, 6]", "error: no"])
    assert results == ["2187", "[11, 40, 6]"]
    assert continuation("The GPU computed 218", results) == "7"
    assert continuation("The GPU computed [11, 40, ", results) == "6]"
    assert continuation("The GPU computed 2", results) is None  # one digit: maybe the question's number
    assert continuation("The GPU computed [11, ", results) is None  # one element: maybe a vector of the question
    assert continuation("The GPU computed 2187", results) == ""  # written whole: it may only end
    assert continuation("Qwen2187", results) is None  # inside a word


def test_float_results_are_values():
    """A float result is the shortest decimal of the GPU's float32 (the chat's expression
    tool), its infinities and NaN as ``inf``/``nan``."""
    assert tool_values("2.3333333") == [2.3333333]
    assert tool_values("[0.33333334, inf, -inf]") == [[0.33333334, float("inf"), float("-inf")]]
    assert tool_values("1e-45") == [1e-45]
    assert stated_numbers("The mean is 2.3333333, about 1e-45 off.") == [2.3333333, 1e-45]


def test_a_float_answer_states_the_gpus_digits():
    outcomes = [ok("2.3333333", "mean([1, 2, 4])")]
    question = "What is the mean of [1, 2, 4]?"
    assert check_answer("The GPU computed 2.3333333.", outcomes, question).quoted
    assert check_answer("The mean of [1, 2, 4] is 2.3333333.", outcomes, question).quoted
    longer = check_answer("The GPU computed 2.33333333333333333333.", outcomes, question)
    assert not longer.quoted and longer.results == ["2.3333333"]
    assert "the GPU computed 2.3333333" in longer.flag()  # the true value beside the claim, not "no value"
    assert not check_answer("The GPU computed 2.33.", outcomes, question).quoted


def test_a_whole_float_mean_is_the_gpus_float():
    """``mean([2, 4, 6])`` is a float32 the tool writes as ``4.0`` (as ``run`` prints a
    float); an answer that says 4.0 or 4 states that number, one that says 4.5 does not,
    and the copy guard finishes a started ``4.`` as the GPU wrote it."""
    from qwengpu_mlx.chat.copying import continuation, result_strings

    outcomes = [ok("4.0", "mean([2, 4, 6])")]
    question = "What is the mean of [2, 4, 6]?"
    assert tool_values("4.0") == [4.0]
    assert check_answer("The GPU computed 4.0.", outcomes, question).quoted
    assert check_answer("The mean is 4.", outcomes, question).quoted
    wrong = check_answer("The mean is 4.5.", outcomes, question)
    assert not wrong.quoted and "the GPU computed 4.0" in wrong.flag()
    assert continuation("The answer is 4.", result_strings(["4.0"])) == "0"
    assert continuation("The answer is 4.0", result_strings(["4.0"])) == ""


def test_the_copy_guard_finishes_a_float_and_ends_it():
    """A float result is copied digit for digit, point included, and a whole one is not
    lengthened: the toy demo went on writing 3s after fmean's 2.3333333."""
    import mlx.core as mx

    from qwengpu_mlx.chat.copying import CopyGuard, continuation, result_strings

    results = result_strings(["2.3333333"])
    assert results == ["2.3333333"]
    assert continuation("The mean is 2.33", results) == "33333"
    assert continuation("The mean is 2.3333333", results) == ""
    vocab = ["3", ".", " The", "33"]
    shown = {"text": ""}
    guard = CopyGuard(results, lambda tokens: shown["text"], lambda t: [vocab.index(t[:2] if t[:2] in vocab else t[0])],
                      lambda t: vocab[t])
    logits = mx.array([[5.0, 4.0, 1.0, 3.0]])  # the model's choice: another "3"
    shown["text"] = "The mean is 2.3333333"
    kept = guard(None, logits)
    assert int(mx.argmax(kept, axis=-1).item()) == 1 and guard.forced == 1  # the "." ends it
    assert kept[0, 0].item() == float("-inf") and kept[0, 3].item() == float("-inf")
    shown["text"] = "The mean is 2.3333333."
    assert guard(None, logits) is logits  # a sentence's point: the number is no longer being copied
