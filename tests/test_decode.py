"""The local judge's own greedy loop: the same answer as llama-cpp-python's, drafts or not."""

from __future__ import annotations

import pytest

from assay.models._decode import draft_from_context
from tiny_model import batch_variant_kernels, smollm2_path


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


def _rate(guesses: list[list[int]], acceptance: list[float], costs, take: list[int]) -> float:  # type: ignore[no-untyped-def]
    expected = sum(1 + sum(a ** (i + 1) for i in range(t)) for a, t in zip(acceptance, take, strict=True))
    return expected / costs(len(guesses) + sum(take))


def test_a_pass_checks_the_drafts_that_give_the_most_tokens_for_its_cost() -> None:
    """Against every choice of draft prefixes: the plan's expected tokens per unit of cost is the highest."""
    import itertools
    import random

    from assay.models._decode import PASS_COSTS, plan_drafts

    rng = random.Random(3)
    for costs in PASS_COSTS.values():
        for _ in range(150):
            guesses = [[7] * rng.randint(0, 4) for _ in range(rng.randint(1, 3))]
            acceptance = [rng.choice([0.05, 0.3, 0.5, 0.8, 0.97]) for _ in guesses]
            take = plan_drafts(guesses, acceptance, costs)
            assert all(0 <= t <= len(g) for t, g in zip(take, guesses, strict=True))
            best = max(
                _rate(guesses, acceptance, costs, list(choice))
                for choice in itertools.product(*(range(len(g) + 1) for g in guesses))
            )
            assert _rate(guesses, acceptance, costs, take) == pytest.approx(best, rel=1e-12)


def test_drafts_are_checked_in_full_where_rows_are_free_and_sparingly_where_they_are_dear() -> None:
    from assay.models._decode import PASS_COSTS, plan_drafts

    guesses = [[1] * 8, [2] * 8, [3] * 5]
    refused, fresh, copying = 1 / 12, 0.5, 31 / 34  # 0 of 10 accepted, none yet, 30 of 32
    assert plan_drafts(guesses, [refused, fresh, copying], PASS_COSTS["flat"]) == [8, 8, 5]
    dear = plan_drafts(guesses, [refused, fresh, copying], PASS_COSTS["avx2"])
    cheap = plan_drafts(guesses, [refused, fresh, copying], PASS_COSTS["amx"])
    assert dear[0] == 0 and dear[2] >= 1 and dear[1] <= dear[2]
    assert plan_drafts(guesses[2:], [copying], PASS_COSTS["avx2"]) >= [3]  # alone, a copy drafts on
    assert all(c >= d for c, d in zip(cheap, dear, strict=True)) and sum(cheap) > sum(dear)
    assert plan_drafts([], [], PASS_COSTS["avx2"]) == []
    assert plan_drafts([[], []], [0.9, 0.9], PASS_COSTS["avx2"]) == [0, 0]


def test_pass_costs_follow_the_build_and_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.errors import ConfigError
    from assay.models._decode import PASS_COSTS, pass_costs

    monkeypatch.delenv("ASSAY_LOCAL_PASS_COSTS", raising=False)
    amx = "CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | AVX512_VNNI = 1 | AMX_INT8 = 1 | OPENMP = 1 |"
    assert pass_costs(amx).name == "flat"  # the default: every draft checked, on any build
    monkeypatch.setenv("ASSAY_LOCAL_PASS_COSTS", "build")
    assert pass_costs(amx).name == "amx"
    assert pass_costs("CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | AVX512_VNNI = 1 | OPENMP = 1 |").name == "avx512"
    assert pass_costs("CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | FMA = 1 | OPENMP = 1 |").name == "avx2"
    assert pass_costs("CPU : NEON = 1 | ARM_FMA = 1 |").name == "avx2"  # unmeasured: rows priced dear
    monkeypatch.setenv("ASSAY_LOCAL_PASS_COSTS", " Flat ")
    assert pass_costs(amx).name == "flat"
    monkeypatch.setenv("ASSAY_LOCAL_PASS_COSTS", "avx3")
    with pytest.raises(ConfigError, match="must be one of amx, avx512, avx2, flat, build, got 'avx3'"):
        pass_costs(amx)
    for table in PASS_COSTS.values():  # one row costs 1; more rows never cost less
        assert table.rows[0] == 1 and table(1) == 1.0
        costs = [table(r) for r in range(1, 100)]
        assert costs == sorted(costs)
    assert PASS_COSTS["avx2"](3) == 1.67 and PASS_COSTS["avx2"](7) == pytest.approx((2.44 + 3.51) / 2)
    assert PASS_COSTS["amx"](80) == pytest.approx(3.42 + (3.42 - 2.5))  # past 64 rows: the 48-64 slope


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


@batch_variant_kernels
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
        # the KV cache holds the prompt and the generated tokens; the last one of a cut answer,
        # or the one that completed the grammar (the end needs no pass), may be unread
        read = llama._input_ids.tolist()
        assert read[: len(tokens)] == tokens and read[len(tokens) :] == decoded.tokens[: len(read) - len(tokens)]
        assert len(read) == len(tokens) + len(decoded.tokens) or (
            (finish == "length" or grammar is not None) and len(read) == len(tokens) + count - 1
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


@batch_variant_kernels
@pytest.mark.slow
def test_where_rows_are_dear_a_call_drafts_while_its_drafts_are_taken(llama) -> None:  # type: ignore[no-untyped-def]
    """On the AVX2 table a story (drafts refused) stops drafting; a list said again (drafts taken) keeps on."""
    from assay.models._decode import PASS_COSTS, greedy_decode

    def decode(text: str, costs: str):  # type: ignore[no-untyped-def]
        llama.reset()
        llama._ctx.kv_cache_clear()
        return greedy_decode(llama, llama.tokenize(text.encode(), add_bos=False), None, 48, costs=PASS_COSTS[costs])

    story = "Tell me a story about a dog named Rex who likes the park. Rex"
    every, dear = decode(story, "flat"), decode(story, "avx2")
    assert every.drafted >= 12 and every.accepted < every.drafted / 2  # most of its drafts are refused
    assert dear.drafted <= every.drafted / 3
    days = "List the days of the week, then again: Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday. "
    days += "Again:"
    copy = decode(days, "avx2")
    assert copy.accepted >= 8 and copy.steps < len(copy.tokens) - 8


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


# Several sequences in one KV cache: the rewrites of one answer share their instructions.
SHARED = (
    "Split the sentence into short statements, one fact each, as JSON. Keep every name and number.\n"
    "Example: The Loire is 1,006 km long and flows into the Atlantic. -> "
    '{"statements": ["The Loire is 1,006 km long.", "The Loire flows into the Atlantic."]}\n'
)
SENTENCES = [
    "The Rhine flows through Switzerland, Germany and the Netherlands, and it is 1,230 km long.",
    "Marie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911.",
    "The bridge opened in 1937 and was painted orange.",
]


def _many_prompts(llama) -> list[list[int]]:  # type: ignore[no-untyped-def]
    return [llama.tokenize(f"{SHARED}Sentence: {s} ->".encode(), add_bos=False) for s in SENTENCES]


def _prompt_logits(llama, prompts: list[list[int]], others: list[list[int]] | None = None):  # type: ignore[no-untyped-def]
    """Each prompt's next-token logits when its own tokens are read in one batch with the others'."""
    import assay.models._decode as decode

    seen = []
    original = decode._read_prompts

    def read(llama, states):  # type: ignore[no-untyped-def]
        original(llama, states)
        seen.extend(s.logits.copy() for s in states)

    decode._read_prompts = read
    try:
        llama.reset()
        decode.greedy_decode_many(llama, prompts, [None] * len(prompts), [1] * len(prompts))
    finally:
        decode._read_prompts = original
    return seen


@pytest.mark.slow
def test_sequences_decoded_together_do_not_see_each_other(llama) -> None:  # type: ignore[no-untyped-def]
    """A sequence reads the shared prefix and its own tokens only: what the others say changes nothing.

    (Where the others' cells sit in the cache changes the sums' order, so a sequence's
    logits are not bitwise those it gets alone; they are the same whatever the others hold.)
    """
    import numpy as np

    from assay.models._decode import prompt_cells

    prompts = _many_prompts(llama)
    first = _prompt_logits(llama, prompts)
    shared = prompt_cells(prompts)[0]
    for i in range(1, len(prompts)):  # the same lengths, other words
        other = [list(p) for p in prompts]
        j = (i + 1) % len(prompts)
        other[j] = other[j][:shared] + [t + 1 for t in other[j][shared:]]
        again = _prompt_logits(llama, other)
        assert np.array_equal(again[i], first[i]), f"sequence {i} changed with sequence {j}'s words"
    for i, prompt in enumerate(prompts):
        llama.reset()
        llama.eval(prompt)
        alone = np.ctypeslib.as_array(
            __import__("llama_cpp").llama_get_logits_ith(llama._ctx.ctx, -1), shape=(llama.n_vocab(),)
        ).copy()
        assert first[i].argmax() == alone.argmax()
        assert np.abs(first[i] - alone).max() < 0.1 * np.abs(alone).max()  # a wrong position moves them by units


@batch_variant_kernels
@pytest.mark.slow
@pytest.mark.parametrize("schema", ["statements", "none"])
def test_prompts_decoded_together_answer_and_leave_the_shared_prefix(llama, schema: str) -> None:  # type: ignore[no-untyped-def]
    from assay.grounding._decompose import Statements
    from assay.models import LocalJudge
    from assay.models._decode import greedy_decode_many, prompt_cells

    grammar = LocalJudge(smollm2_path(), n_ctx=2048)._grammar(Statements) if schema == "statements" else None
    prompts = _many_prompts(llama)
    alone = [_ours(llama, p, grammar, 40, 8)[1] for p in prompts]
    llama.reset()
    together = greedy_decode_many(llama, prompts, [grammar] * 3, [40, 40, 40])
    assert together[0].tokens == alone[0].tokens  # the first sequence's cells are laid out as alone
    for one, many in zip(alone, together, strict=True):
        assert many.finish_reason in ("stop", "length") and 0 < len(many.tokens) <= 40
        assert many.tokens[:3] == one.tokens[:3]
        if schema == "statements":
            text = llama.detokenize(many.tokens).decode()
            assert text.replace(" ", "").startswith('{"statements"') and (
                many.finish_reason == "length" or text.endswith("}")
            )
    assert sum(d.steps for d in together) >= sum(d.steps for d in alone) - 6
    shared, cells = prompt_cells(prompts)
    assert 0 < shared < min(len(p) for p in prompts) and cells == shared + sum(len(p) - shared for p in prompts)
    assert llama.n_tokens == shared and llama._input_ids.tolist() == prompts[0][:shared]
    # nothing of the other sequences is left in the cache: the first prompt, decoded now, answers as alone
    assert greedy_decode_many(llama, prompts[:1], [grammar], [40])[0].tokens == alone[0].tokens


@batch_variant_kernels
@pytest.mark.slow
def test_sequences_wait_for_cells_when_the_window_is_short(monkeypatch: pytest.MonkeyPatch) -> None:
    """A window too small for every answer at once: sequences wait, or are evicted and read again; none is cut."""
    import assay.models._decode as decode
    from assay.grounding._decompose import Statements
    from assay.models import LocalJudge

    judge = LocalJudge(smollm2_path(), n_ctx=256)
    small, grammar = judge.load(), judge._grammar(Statements)  # SmolLM2 rambles in it: long answers
    prompts = _many_prompts(small)
    _, cells = decode.prompt_cells(prompts)
    room = 256 - cells
    assert 0 < room < 3 * 100  # three answers of up to 100 tokens do not fit at once
    evictions: list[int] = []
    evict = decode._evict
    monkeypatch.setattr(decode, "_evict", lambda *a: (evictions.append(1), evict(*a)))
    small.reset()
    together = decode.greedy_decode_many(small, prompts, [grammar] * 3, [100] * 3)
    assert sum(len(d.tokens) for d in together) > room  # they did not fit at once
    assert evictions  # at some step none could go on: the latest were evicted and read again
    for prompt, decoded in zip(prompts, together, strict=True):
        # each had the room it has alone: cut by its own max_tokens or the window, never by the others
        assert decoded.finish_reason == "stop" or len(decoded.tokens) == min(100, 256 - len(prompt) - 1)
        assert small.detokenize(decoded.tokens).decode().replace(" ", "").startswith('{"statements"')
    assert small.n_tokens == decode.prompt_cells(prompts)[0]  # the evicted were cleaned up with the rest


@pytest.mark.slow
def test_prompts_that_do_not_fit_together_are_refused(llama) -> None:  # type: ignore[no-untyped-def]
    from assay.errors import JudgeError
    from assay.models._decode import greedy_decode_many, prompt_logits_many

    long = [list(range(100, 900)), list(range(1000, 1800)), list(range(2000, 2800))]
    with pytest.raises(JudgeError, match="2400 tokens together, above the context window"):
        greedy_decode_many(llama, long, [None] * 3, [8] * 3)
    with pytest.raises(JudgeError, match="9 sequences at once"):
        greedy_decode_many(llama, [[1, 2]] * 9, [None] * 9, [1] * 9)
    with pytest.raises(JudgeError, match="2400 tokens together, above the context window"):
        prompt_logits_many(llama, long)


@pytest.mark.slow
def test_prompts_read_together_give_each_its_own_logits_and_leave_the_shared_prefix(llama) -> None:  # type: ignore[no-untyped-def]
    """The logits after each prompt, read in one batch, are the ones it gets alone (up to batching's rounding)."""
    import llama_cpp
    import numpy as np

    from assay.models._decode import prompt_cells, prompt_logits_many

    prompts = _many_prompts(llama)
    alone = []
    for prompt in prompts:
        llama.reset()
        llama.eval(prompt)
        alone.append(
            np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llama._ctx.ctx, -1), shape=(llama.n_vocab(),)).copy()
        )
    llama.reset()
    together = prompt_logits_many(llama, prompts)
    assert len(together) == len(prompts)
    for mine, own in zip(together, alone, strict=True):
        assert mine.argmax() == own.argmax()
        assert np.abs(mine - own).max() < 0.1 * np.abs(own).max()  # another prompt's logits differ by units
    assert not np.allclose(together[0], together[1])  # each row is its own prompt's
    shared = prompt_cells(prompts)[0]
    assert llama.n_tokens == shared and llama._input_ids.tolist() == prompts[0][:shared]
    # nothing of the other sequences is left in the cache: a prompt read alone now reads as alone
    again = prompt_logits_many(llama, [prompts[2]])[0]
    assert again.argmax() == alone[2].argmax() and np.abs(again - alone[2]).max() < 0.1 * np.abs(alone[2]).max()


@pytest.mark.slow
async def test_choice_calls_made_together_are_read_in_one_batch() -> None:
    """The local judge reads the verdict calls asked at once in one batch; a call that cannot be read fails alone."""
    import asyncio
    import itertools

    from assay.errors import ConfigError, JudgeError
    from assay.models import LocalJudge

    # the cues set each call's P apart, so an answer handed to the wrong call shows
    cues = dict(zip(SENTENCES, ["The answer is yes.", "The answer is no.", ""], strict=True))

    def messages(sentence: str) -> list[dict[str, str]]:
        return [
            {"role": "user", "content": f"{SHARED}Is this sentence about science? {sentence} {cues.get(sentence, '')}"}
        ]

    one_by_one = LocalJudge(smollm2_path(), n_ctx=2048, batch_choices=False)
    expected = [
        await one_by_one.choice_probabilities(messages(s), prefix="Answer: ", choices=["yes", "no"]) for s in SENTENCES
    ]
    assert one_by_one.decode_stats["batches"] == 0

    judge = LocalJudge(smollm2_path(), n_ctx=2048)
    got = await asyncio.gather(
        *(judge.choice_probabilities(messages(s), prefix="Answer: ", choices=["yes", "no"]) for s in SENTENCES)
    )
    assert judge.decode_stats["batches"] == 1 and judge.decode_stats["batched"] == len(SENTENCES)
    alone = sorted(p["yes"] for p in expected)
    assert min(b - a for a, b in itertools.pairwise(alone)) > 0.06  # apart by more than twice the tolerance below
    for mine, own in zip(got, expected, strict=True):  # each call got its own answer, up to batching's rounding
        assert mine["yes"] == pytest.approx(own["yes"], abs=0.03) and mine["yes"] + mine["no"] == pytest.approx(1)
        assert mine.usage.prompt_tokens == own.usage.prompt_tokens > 0

    mixed = await asyncio.gather(
        judge.choice_probabilities(messages(SENTENCES[0]), prefix="Answer: ", choices=["yes", "no"]),
        judge.choice_probabilities(messages("word " * 3000), prefix="Answer: ", choices=["yes", "no"]),
        judge.choice_probabilities(messages(SENTENCES[1]), prefix="Answer: ", choices=["yes", "yes"]),
        return_exceptions=True,
    )
    assert isinstance(mixed[0], dict) and mixed[0]["yes"] == pytest.approx(expected[0]["yes"], abs=0.03)
    assert isinstance(mixed[1], JudgeError) and "exceeds the context window (2048)" in str(mixed[1])
    assert isinstance(mixed[2], ConfigError) and "two distinct answers" in str(mixed[2])


@pytest.mark.slow
async def test_greedy_calls_made_together_are_decoded_in_one_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local judge batches what a metric asks at once; a call that cannot fit fails alone.

    Every draft is checked in full (``flat`` pass costs), so that a call's passes read the
    same rows of its own alone and in the batch: how many rows a pass reads decides which
    kernel multiplies them, and so the last bits of its logits.
    """
    import asyncio

    monkeypatch.setenv("ASSAY_LOCAL_PASS_COSTS", "flat")

    from assay.grounding._decompose import SENTENCE_PROMPT, SentenceToSplit
    from assay.models import GenerateConfig, LocalJudge
    from assay.prompts import ask

    values = [SentenceToSplit(question="", previous="", sentence=s) for s in SENTENCES]
    short = GenerateConfig(max_tokens=48)
    one_by_one = LocalJudge(smollm2_path(), n_ctx=2048)
    expected = [(await ask(one_by_one, SENTENCE_PROMPT, v, config=short)).call.raw_output for v in values]
    assert one_by_one.decode_stats["batches"] == 0

    judge = LocalJudge(smollm2_path(), n_ctx=2048)
    answers = await asyncio.gather(*(ask(judge, SENTENCE_PROMPT, v, config=short) for v in values))
    assert judge.decode_stats["batches"] == 1 and judge.decode_stats["batched"] == 3
    assert answers[0].call.raw_output == expected[0]  # laid out in the cache as it is alone
    for answer, value in zip(answers, values, strict=True):  # each answers its own sentence
        assert value.sentence in str(answer.call.messages) and answer.call.usage.completion_tokens > 0
        assert answer.call.raw_output and answer.call.raw_output.replace(" ", "").startswith('{"statements"')

    too_long = SentenceToSplit(question="", previous="", sentence="word " * 3000)
    mixed = await asyncio.gather(
        ask(judge, SENTENCE_PROMPT, values[0], config=short),
        ask(judge, SENTENCE_PROMPT, too_long, config=short),
        return_exceptions=True,
    )
    assert not isinstance(mixed[0], BaseException) and mixed[0].call.raw_output == expected[0]
    assert not isinstance(mixed[1], BaseException) and mixed[1].failure is not None
    assert mixed[1].failure.reason.value == "judge_error"
    assert "prompt of 3549 tokens exceeds the context window (2048)" in mixed[1].failure.detail


@pytest.mark.slow
async def test_a_batch_that_fails_is_decoded_call_by_call_so_only_the_culprit_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    import assay.models._local as local
    from assay.grounding._decompose import SENTENCE_PROMPT, SentenceToSplit
    from assay.models import GenerateConfig, LocalJudge
    from assay.prompts import ask

    real = local.greedy_decode_many
    culprit = "The bridge opened"

    def flaky(llama, prompts, grammars, limits, **kw):  # type: ignore[no-untyped-def]
        if any(culprit in llama.detokenize(p).decode(errors="ignore") for p in prompts):
            raise RuntimeError("llama_decode returned -1")  # as llama.cpp reports a bad batch
        return real(llama, prompts, grammars, limits, **kw)

    monkeypatch.setattr(local, "greedy_decode_many", flaky)
    judge = LocalJudge(smollm2_path(), n_ctx=2048)
    short = GenerateConfig(max_tokens=24)
    values = [SentenceToSplit(question="", previous="", sentence=s) for s in SENTENCES]
    answers = await asyncio.gather(
        *(ask(judge, SENTENCE_PROMPT, v, config=short) for v in values), return_exceptions=True
    )
    assert isinstance(answers[2], RuntimeError)  # the culprit's own error, as it was before batching
    for answer in answers[:2]:
        assert not isinstance(answer, BaseException) and answer.call.usage.completion_tokens > 0
    assert judge.decode_stats["batches"] == 0  # the batch failed; each was decoded alone


def test_sequences_come_from_the_argument_or_the_environment_and_bad_ones_name_their_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from assay.errors import ConfigError
    from assay.models import LocalJudge
    from assay.models._decode import SEQUENCES

    monkeypatch.delenv("ASSAY_LOCAL_SEQUENCES", raising=False)
    assert LocalJudge().sequences == SEQUENCES
    monkeypatch.setenv("ASSAY_LOCAL_SEQUENCES", "1")
    assert LocalJudge().sequences == 1
    assert LocalJudge(sequences=3).sequences == 3  # the argument wins
    for bad in ("0", "9", "two", "1.5"):
        monkeypatch.setenv("ASSAY_LOCAL_SEQUENCES", bad)
        with pytest.raises(ConfigError, match=f"ASSAY_LOCAL_SEQUENCES must be a whole number from 1 to 8, got '{bad}'"):
            LocalJudge()
    with pytest.raises(ConfigError, match="sequences must be a whole number from 1 to 8, got '0'"):
        LocalJudge(sequences=0)


@pytest.mark.slow
def test_a_run_hands_a_samples_rewrites_to_the_local_judge_together() -> None:
    """Through the runner's stack (cache, retries, request slots) too: one worker's calls are not serialised."""
    import assay
    from assay.metrics import Faithfulness
    from assay.models import LocalJudge

    judge = LocalJudge(smollm2_path(), n_ctx=2048)
    sample = assay.Sample(
        id="tower",
        answer="The Eiffel Tower is in Paris. It was built in 1889 and it is 330 metres tall. "
        "It was designed by the company of Gustave Eiffel, and it opened in March.",
        contexts=("The Eiffel Tower, in Paris, was built in 1889. It is 330 metres tall.",),
    )
    result = assay.evaluate([sample], [Faithfulness()], judge, cache=False, progress="none")
    calls = result.results[0].scores["faithfulness"].calls
    assert sum(1 for c in calls if c.purpose == "faithfulness.sentence_statements") == 2
    assert judge.decode_stats["batches"] >= 1 and judge.decode_stats["batched"] >= 2


def test_the_grammar_check_picks_the_best_allowed_token_as_a_check_of_the_whole_vocabulary_does(llama) -> None:  # type: ignore[no-untyped-def]
    """The next-best candidates are put to the grammar before the whole vocabulary: the same token either way.

    At the start of a statements object the grammar allows a handful of tokens. Each case
    puts the best allowed one at another rank: first (no fallback), inside the candidates,
    just past them, far past them, tied at the candidates' edge with a lower id left out,
    and tied inside them (the lower id wins, as argmax's does).
    """
    import numpy as np

    from assay.grounding._decompose import Statements
    from assay.models import LocalJudge
    from assay.models._decode import GRAMMAR_CANDIDATES, _GrammarCheck

    grammar = LocalJudge(smollm2_path(), n_ctx=2048)._grammar(Statements)
    check = _GrammarCheck(llama, grammar)
    try:
        n = llama.n_vocab()

        def reference(logits: np.ndarray) -> int:
            check._all["id"], check._all["logit"] = np.arange(n), logits
            check._apply(check._all)
            return int(check._all["logit"].argmax())

        check._all["logit"] = 0.0
        check._apply(check._all)
        allowed = np.flatnonzero(np.isfinite(check._all["logit"]))
        assert 0 < len(allowed) < 50, len(allowed)  # the grammar refuses most of the vocabulary here
        refused = np.setdiff1d(np.arange(n), allowed)
        rng = np.random.default_rng(7)
        k = GRAMMAR_CANDIDATES
        sizes: list[int] = []
        apply = check._apply

        def counted(data: np.ndarray) -> None:
            sizes.append(len(data))
            apply(data)

        check._apply = counted
        for rank in (0, 1, 10, k - 1, k, k + 1, 3 * k, 5_000):
            logits = rng.normal(0, 1, n).astype(np.float32)
            logits[allowed] = -10.0
            if rank:
                logits[rng.permutation(refused)[:rank]] = np.linspace(30, 20, rank, dtype=np.float32)
            target = int(rng.choice(allowed))
            logits[target] = 19.0
            sizes.clear()
            assert check.best(logits) == target, rank
            # the whole vocabulary is checked only when no allowed token is among the candidates
            # above the lowest of them (the k-th could tie with one left out)
            assert (n in sizes) == (rank >= k - 1), (rank, sizes)
            assert reference(logits) == target
        # a tie at the candidates' edge: which of the two tied tokens is the k-th is
        # arbitrary, so the lower id may be left out; the whole vocabulary must settle it
        low, high = int(allowed.min()), int(allowed.max())
        logits = np.full(n, -10.0, dtype=np.float32)
        logits[rng.permutation(refused)[: k - 1]] = 30.0
        logits[high] = logits[low] = 5.0
        sizes.clear()
        assert check.best(logits) == low and n in sizes
        assert reference(logits) == low
        # a tie among the candidates: the lower id wins, without the whole vocabulary
        logits = np.full(n, -10.0, dtype=np.float32)
        logits[rng.permutation(refused)[:5]] = 30.0
        logits[high] = logits[low] = 25.0
        sizes.clear()
        assert check.best(logits) == low and n not in sizes
        assert reference(logits) == low
    finally:
        check.close()


# Each judge prompt's output model, as the model writes it (compact JSON, as the examples show).
ANSWERS = {
    "Statements": '{"statements": ["The Rhine is 1,230 km long.", "It flows north."]}',
    "StatementJudgement": '{"verdict": 0, "reason": "The context gives 1,230 km."}',
    "Requirements": '{"requirements": ["Cancel reservation ABC"]}',
    "RequirementJudgement": '{"verdict": "not met", "calls": [2, 3], "reason": "No call cancels it."}',
    "VerdictList": '{"verdicts": [{"statement": "The Rhine is long.", "reason": "It says so.", "verdict": 1}]}',
    "GoalAndEndState": '{"user_goal": "Cancel ABC.", "end_state": "ABC was cancelled."}',
    "RelevanceJudgement": '{"relevant": 1, "noncommittal": 0, "reason": "It answers."}',
}


def _judge_output_models() -> dict[str, type]:
    """Every output model of a judge prompt defined in assay (the metrics and retrieval load them all)."""
    import sys

    import assay.metrics
    import assay.retrieval  # noqa: F401
    from assay.prompts import JudgePrompt

    found: dict[str, type] = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("assay."):
            for value in vars(module).values():
                if isinstance(value, JudgePrompt):
                    found[value.output_model.__name__] = value.output_model
    return found


@pytest.mark.slow
def test_every_judge_grammar_allows_nothing_after_its_value_but_the_end(llama) -> None:  # type: ignore[no-untyped-def]
    """The loop ends a call as soon as its grammar allows the end: that must mean the answer is whole.

    For each judge prompt's output model (and the reason's string grammar), an answer is
    fed token by token: the grammar allows the end only after its last token, and then
    allows no other token of the vocabulary, not even a space. A draft that runs past the
    answer is cut where it does.
    """
    import llama_cpp
    import numpy as np

    from assay.models import LocalJudge
    from assay.models._decode import _GrammarCheck
    from assay.models._local import _string_body_grammar

    models = _judge_output_models()
    assert set(models) == set(ANSWERS), "a judge prompt's output model has no answer here"
    judge = LocalJudge(smollm2_path(), n_ctx=2048)
    grammars = {name: (judge._grammar(model), ANSWERS[name]) for name, model in models.items()}
    grammars["reason"] = (_string_body_grammar(200), 'The context gives 1,230 km, not 1,300."')
    for name, (grammar, answer) in grammars.items():
        if name in models:
            models[name].model_validate_json(answer)  # a valid answer
        tokens = llama.tokenize(answer.encode(), add_bos=False)
        after = llama.tokenize(b' {"x": 1}\n\nExample', add_bos=False)
        newline = llama.tokenize(b"\n", add_bos=False)  # a raw newline: in no string, between no two tokens
        check = _GrammarCheck(llama, grammar)
        try:
            assert check.allowed(tokens + after) == len(tokens), name  # the draft is cut at the end
            assert check.allowed(tokens[:3] + newline + tokens[3:]) == 3, name  # ... or where it goes wrong
            for k, token in enumerate(tokens):
                assert not check.complete(), (name, k)
                check.accept(token)
            assert check.complete(), name
            check._all["logit"] = 0.0
            check._apply(check._all)
            allowed = np.flatnonzero(np.isfinite(check._all["logit"]))
            assert len(allowed) and all(llama_cpp.llama_vocab_is_eog(llama._model.vocab, int(t)) for t in allowed), (
                name,
                [llama.detokenize([int(t)]) for t in allowed[:5]],
            )
        finally:
            check.close()


@pytest.mark.slow
def test_a_call_ends_without_a_pass_and_drafts_stop_where_the_grammar_does(  # type: ignore[no-untyped-def]
    llama, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same answer with and without the grammar's help; one pass fewer at the end, no draft past the JSON."""
    from assay.grounding._decompose import Statements
    from assay.models import LocalJudge, _decode

    grammar = LocalJudge(smollm2_path(), n_ctx=2048)._grammar(Statements)
    example = '{"statements": ["The sky is blue.", "The grass is green."]}'
    text = f"Example: {example}\nThe end of the example.\n"
    text += "Rewrite as JSON statements: The sky is blue and the grass is green.\nAnswer: "
    prompt = llama.tokenize(text.encode(), add_bos=False)
    runs = {}
    for on in (False, True):
        monkeypatch.setattr(_decode, "GRAMMAR_DRAFTS", on)
        for draft in (0, 8):
            answer, decoded = _ours(llama, prompt, grammar, 48, draft)
            runs[on, draft] = (answer, decoded)
    assert runs[True, 0][0] == runs[False, 0][0] == runs[True, 8][0] == runs[False, 8][0]
    assert runs[True, 0][0].endswith("}") and runs[True, 0][1].finish_reason == "stop"
    assert runs[True, 0][1].steps == runs[False, 0][1].steps - 1  # no pass to choose the end token
    # the copy of the example runs on into "\nThe end of the example.": those draft tokens are never read
    assert runs[True, 8][1].drafted < runs[False, 8][1].drafted
    assert runs[True, 8][1].accepted == runs[False, 8][1].accepted
