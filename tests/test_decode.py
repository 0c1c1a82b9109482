"""The local judge's own greedy loop: the same answer as llama-cpp-python's, drafts or not."""

from __future__ import annotations

import pytest

from assay.models._decode import draft_from_context
from tiny_model import smollm2_path


def test_draft_takes_what_followed_the_longest_recent_match() -> None:
    #        0  1  2  3  4  5  6  7  8  9 10 11
    text = [5, 6, 7, 8, 9, 1, 6, 7, 2, 3, 6, 7]
    # the last two tokens (6, 7) occurred at 1 and 6: the most recent wins
    assert draft_from_context(text, 3) == [2, 3, 6]
    # a longer match beats a more recent shorter one
    text = [1, 2, 3, 4, 40, 41, 9, 3, 4, 50, 1, 2, 3, 4]
    assert draft_from_context(text, 2) == [40, 41]


def test_draft_is_empty_without_a_match_or_room() -> None:
    assert draft_from_context([1, 2, 3, 4, 5], 4) == []
    assert draft_from_context([1, 2, 1, 2], 0) == []
    assert draft_from_context([1, 2], 4) == []
    # a match at the very end has nothing after it
    assert draft_from_context([7, 8, 7, 8], 4) == [7, 8]


def test_draft_respects_its_limit_and_ngram_sizes() -> None:
    text = [1, 2, 3, 4, 5, 6, 7, 1, 2]
    assert draft_from_context(text, 2) == [3, 4]
    assert draft_from_context(text, 2, ngram=(3,)) == []


pytest.importorskip("llama_cpp")


@pytest.fixture(scope="module")
def llama():  # type: ignore[no-untyped-def]
    from assay.models import LocalJudge

    return LocalJudge(smollm2_path(), n_ctx=2048).load()


PROMPTS = [
    "Rewrite as JSON statements: The Rhine flows through Switzerland, Germany and the Netherlands, "
    'and it is 1,230 km long. {"statements": ["The Rhine flows through Switzerland.", ',
    "Say whether the statement is supported. Context: Paris is the capital of France. "
    "Statement: Paris is in Spain. Answer:",
    "List three colours as JSON. The colours are red, green and blue.",
]


def _reference(llama, prompt: list[int], grammar, max_tokens: int) -> tuple[str, str, int]:  # type: ignore[no-untyped-def]
    llama.reset()
    llama._ctx.kv_cache_clear()
    result = llama.create_completion(prompt=prompt, grammar=grammar, temperature=0, max_tokens=max_tokens, seed=0)
    choice = result["choices"][0]
    return choice["text"], choice["finish_reason"], result["usage"]["completion_tokens"]


def _ours(llama, prompt: list[int], grammar, max_tokens: int, draft: int):  # type: ignore[no-untyped-def]
    from assay.models._decode import greedy_decode

    llama.reset()
    llama._ctx.kv_cache_clear()
    decoded = greedy_decode(llama, prompt, grammar, max_tokens, draft=draft)
    text = llama.detokenize(decoded.tokens, prev_tokens=prompt).decode("utf-8", errors="ignore")
    return text, decoded


@pytest.mark.slow
@pytest.mark.parametrize(
    ("prompt", "schema"),
    [(PROMPTS[0], "statements"), (PROMPTS[1], "verdict"), (PROMPTS[2], "none"), (PROMPTS[0], "none")],
)
def test_greedy_loop_answers_as_llama_cpp_python_does(llama, prompt: str, schema: str) -> None:  # type: ignore[no-untyped-def]
    from assay.grounding._decompose import Statements
    from assay.grounding._verify import StatementJudgement
    from assay.models import LocalJudge

    judge = LocalJudge(smollm2_path(), n_ctx=2048)
    grammar = {
        "statements": lambda: judge._grammar(Statements),
        "verdict": lambda: judge._grammar(StatementJudgement),
        "none": lambda: None,
    }[schema]()
    tokens = llama.tokenize(prompt.encode(), add_bos=False)
    expected, finish, count = _reference(llama, tokens, grammar, 32)
    for draft in (0, 8):
        text, decoded = _ours(llama, tokens, grammar, 32, draft)
        assert text == expected, (draft, text, expected)
        assert decoded.finish_reason == finish
        assert len(decoded.tokens) == count
        # the KV cache holds the prompt and the generated tokens (the last one of a cut answer may be unread)
        read = llama._input_ids.tolist()
        assert read[: len(tokens)] == tokens and read[len(tokens) :] == decoded.tokens[: len(read) - len(tokens)]
        assert len(read) == len(tokens) + len(decoded.tokens) or (
            finish == "length" and len(read) == len(tokens) + count - 1
        )


@pytest.mark.slow
def test_drafts_are_checked_and_a_copy_is_mostly_accepted(llama) -> None:  # type: ignore[no-untyped-def]
    """A prompt that the answer copies: drafted tokens are accepted, fewer forward passes run."""
    sentence = "The quick brown fox jumps over the lazy dog near the old river bank at dawn."
    prompt = llama.tokenize(f"Repeat exactly: {sentence}\nRepeated: {sentence}\nRepeat again:".encode(), add_bos=False)
    _, plain = _ours(llama, prompt, None, 24, 0)
    _, drafted = _ours(llama, prompt, None, 24, 8)
    assert drafted.tokens == plain.tokens
    assert plain.steps == len(plain.tokens) - 1 and plain.drafted == 0
    assert drafted.accepted > 0 and drafted.steps < plain.steps


@pytest.mark.slow
def test_max_tokens_cuts_with_length_and_the_context_window_is_checked(llama) -> None:  # type: ignore[no-untyped-def]
    from assay.errors import JudgeError
    from assay.models._decode import greedy_decode

    tokens = llama.tokenize(b"Count: one, two, three, four, five, six,", add_bos=False)
    _, decoded = _ours(llama, tokens, None, 3, 8)
    assert decoded.finish_reason == "length" and len(decoded.tokens) == 3
    with pytest.raises(JudgeError, match="exceeds the context window"):
        greedy_decode(llama, [1] * 2048, None, 8)


@pytest.mark.slow
async def test_local_judge_uses_the_loop_only_at_temperature_zero() -> None:
    from assay.grounding._verify import STATEMENT_PROMPT, StatementCheck
    from assay.models import GenerateConfig, LocalJudge
    from assay.prompts import ask

    judge = LocalJudge(smollm2_path(), n_ctx=2048)
    value = StatementCheck(context=["Paris is the capital of France."], statement="Paris is in France.")
    answer = await ask(judge, STATEMENT_PROMPT, value)
    assert answer.failure is None and answer.output is not None
    greedy = judge.decode_stats["generated"]
    assert greedy == answer.call.usage.completion_tokens > 0
    await ask(judge, STATEMENT_PROMPT, value, config=GenerateConfig(temperature=0.7))
    assert judge.decode_stats["generated"] == greedy  # sampling goes through llama-cpp-python


def test_a_bad_decoding_loop_name_is_a_config_error_naming_where_it_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.errors import ConfigError
    from assay.models import LocalJudge

    monkeypatch.setenv("ASSAY_LOCAL_DECODE_LOOP", "llamacpp")
    with pytest.raises(ConfigError, match="ASSAY_LOCAL_DECODE_LOOP must be 'assay' or 'llama_cpp', got 'llamacpp'"):
        LocalJudge()
    with pytest.raises(ConfigError, match="decode_loop must be"):
        LocalJudge(decode_loop="fast")  # type: ignore[arg-type]
    monkeypatch.setenv("ASSAY_LOCAL_DECODE_LOOP", "llama_cpp")
    assert LocalJudge().decode_loop == "llama_cpp"
    assert LocalJudge(decode_loop="assay").decode_loop == "assay"  # the argument wins over the variable
