"""Verdict parsing against a corpus of real-looking judge outputs (promptfoo issue 2468).

Each row is what some judge (GPT-4o, Claude, Llama-3-8B, Qwen-1.5B, Mistral) emits, with
the exact outcome: the verdict values (and reasons where they matter), or the exact
:class:`UnscoredReason` (and a fragment of the detail where it matters).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from assay import Binary, UnscoredReason
from assay.parsing import (
    ParsedVerdict,
    StatementVerdicts,
    Unparsed,
    find_json_values,
    looks_like_refusal,
    parse_output,
    parse_verdicts,
)

R = UnscoredReason
Expected = list[int] | list[tuple[int, str]] | UnscoredReason


@dataclass(frozen=True)
class Case:
    id: str
    text: str | None
    n: int
    expected: Expected
    finish_reason: str | None = None
    detail: str | None = None  # a fragment the Unparsed detail must contain


def _verdicts_json(*items: tuple[str, str, Any]) -> str:
    return json.dumps({"verdicts": [{"statement": s, "reason": r, "verdict": v} for s, r, v in items]})


OURS_3 = _verdicts_json(
    ("Paris is the capital of France.", "Stated in the context.", 1),
    ("Paris has 40 million inhabitants.", "The context gives 2.1 million.", 0),
    ("The Seine flows through Paris.", "Mentioned in paragraph 2.", 1),
)

CORPUS: list[Case] = [
    # --- plain JSON, our shape -------------------------------------------------------
    Case("gpt4o-plain-json", OURS_3, 3, [1, 0, 1]),
    Case(
        "gpt4o-plain-json-reasons",
        OURS_3,
        3,
        [
            (1, "Stated in the context."),
            (0, "The context gives 2.1 million."),
            (1, "Mentioned in paragraph 2."),
        ],
    ),
    Case(
        "gpt4o-pretty-printed",
        json.dumps(json.loads(OURS_3), indent=2),
        3,
        [1, 0, 1],
    ),
    Case("claude-preamble", "Sure! Here is the evaluation:\n\n" + OURS_3, 3, [1, 0, 1]),
    Case("claude-json-fence", "Here is my evaluation:\n```json\n" + OURS_3 + "\n```", 3, [1, 0, 1]),
    Case("fence-no-language", "```\n" + OURS_3 + "\n```\n", 3, [1, 0, 1]),
    Case("fence-uppercase-json", "```JSON\n" + OURS_3 + "\n```", 3, [1, 0, 1]),
    Case(
        "llama-trailing-commentary",
        OURS_3 + "\n\nNote: statement 2 contradicts the context {population figures}.",
        3,
        [1, 0, 1],
    ),
    Case(
        "mistral-fence-then-commentary",
        "```json\n" + OURS_3 + "\n```\nLet me know if you need anything else!",
        3,
        [1, 0, 1],
    ),
    Case(
        "string-verdicts-yes-no",
        _verdicts_json(("a", "ok", "yes"), ("b", "no support", "No"), ("c", "ok", " YES ")),
        3,
        [1, 0, 1],
    ),
    Case(
        "string-verdicts-1-0",
        _verdicts_json(("a", "ok", "1"), ("b", "no", "0")),
        2,
        [1, 0],
    ),
    Case(
        "nested-junk-extra-keys-ignored",
        json.dumps(
            {
                "verdicts": [
                    {
                        "statement": "a",
                        "reason": "r",
                        "verdict": 1,
                        "meta": {"conf": [0.9, {"x": 2}]},
                    },
                    {"statement": "b", "reason": "r", "verdict": 0, "score": 2},
                ],
                "summary": {"supported": 1, "total": 2},
            }
        ),
        2,
        [1, 0],
    ),
    Case(
        "braces-and-quotes-inside-strings",
        'Result: {"verdicts": [{"statement": "f(x) = {x | x > 0} and [a, b]", '
        '"reason": "The context says \\"{x | x > 0}\\" verbatim } ]", "verdict": 1}]}',
        1,
        [(1, 'The context says "{x | x > 0}" verbatim } ]')],
    ),
    Case(
        "unicode-statements-and-reasons",
        _verdicts_json(
            ("北京是中国的首都。", "上下文中明确提到。", 1),
            ("Der Bodensee liegt in Österreich 🇦🇹.", "Nur teilweise — naïve.", 0),
        ),
        2,
        [(1, "上下文中明确提到。"), (0, "Nur teilweise — naïve.")],
    ),
    Case(
        "unicode-escapes",
        '{"verdicts": [{"statement": "caf\\u00e9", "reason": "\\u2714 found", "verdict": 1}]}',
        1,
        [(1, "✔ found")],
    ),
    Case(
        "refusal-phrase-plus-valid-json",
        "I cannot be completely certain about statement 2, but here is my best evaluation:\n" + OURS_3,
        3,
        [1, 0, 1],
    ),
    Case(
        "example-json-then-real-json-first-valid-wins",
        'Format: {"verdicts": [...]}\n\n' + OURS_3,
        3,
        [1, 0, 1],
    ),
    Case(
        "valid-json-despite-finish-length",
        OURS_3,
        3,
        [1, 0, 1],
        finish_reason="length",
    ),
    Case(
        "fence-never-closed-but-json-complete",
        "```json\n" + OURS_3 + "\n",
        3,
        [1, 0, 1],
    ),
    # --- other JSON shapes -----------------------------------------------------------
    Case(
        "ragas-statements-shape",
        json.dumps(
            {
                "statements": [
                    {"statement": "a", "reason": "in context", "verdict": 1},
                    {"statement": "b", "reason": "not in context", "verdict": 0},
                ]
            }
        ),
        2,
        [(1, "in context"), (0, "not in context")],
    ),
    Case(
        "ragas-statement-list-is-not-verdicts",
        '{"statements": ["Paris is in France.", "The Seine is long."]}',
        2,
        R.PARSE_FAILURE,
        detail="statements.0: verdict must be 0 or 1, got 'Paris is in France.'",
    ),
    Case("bare-list-ints", "[1, 0, 1]", 3, [1, 0, 1]),
    Case("bare-list-after-prose", "The verdicts are: [1,0,1]", 3, [1, 0, 1]),
    Case("bare-list-strings", '["yes", "no"]', 2, [1, 0]),
    Case(
        "bare-list-of-objects",
        '[{"statement": "a", "reason": "x", "verdict": 0}, {"statement": "b", "verdict": 1}]',
        2,
        [(0, "x"), (1, "")],
    ),
    Case("verdicts-as-bare-ints", '{"verdicts": [1, 1, 0]}', 3, [1, 1, 0]),
    Case(
        "single-verdict-object",
        '{"reason": "The context says so.", "verdict": 1}',
        1,
        [(1, "The context says so.")],
    ),
    Case(
        "wrapper-object-is-not-guessed",
        '{"result": {"verdicts": [{"verdict": 1}]}}',
        1,
        R.PARSE_FAILURE,
        detail="no verdicts found",
    ),
    Case(
        "python-dict-single-quotes",
        "{'verdicts': [{'verdict': 1}]}",
        1,
        R.PARSE_FAILURE,
        detail="Expecting property name enclosed in double quotes",
    ),
    Case(
        "empty-verdict-list",
        '{"verdicts": []}',
        2,
        R.VERDICT_COUNT_MISMATCH,
        detail="0 verdicts for 2",
    ),
    Case(
        "verdicts-not-a-list",
        '{"verdicts": "1, 0"}',
        2,
        R.PARSE_FAILURE,
        detail="verdicts: expected a list",
    ),
    # --- invalid verdict values: never turned into a verdict ------------------------
    Case(
        "verdict-2",
        _verdicts_json(("a", "r", 1), ("b", "r", 2)),
        2,
        R.PARSE_FAILURE,
        detail="verdicts.1.verdict: verdict must be 0 or 1, got 2",
    ),
    Case(
        "verdict-minus-1",
        _verdicts_json(("a", "r", -1)),
        1,
        R.PARSE_FAILURE,
        detail="verdicts.0.verdict: verdict must be 0 or 1, got -1",
    ),
    Case(
        "verdict-string-1.0",
        _verdicts_json(("a", "r", "1.0")),
        1,
        R.PARSE_FAILURE,
        detail="verdicts.0.verdict: verdict must be 0 or 1, got '1.0'",
    ),
    Case(
        "verdict-float-1.0",
        '{"verdicts": [{"statement": "a", "reason": "r", "verdict": 1.0}]}',
        1,
        R.PARSE_FAILURE,
        detail="verdicts.0.verdict: verdict must be 0 or 1, got 1.0",
    ),
    Case(
        "verdict-true",
        _verdicts_json(("a", "r", True)),
        1,
        R.PARSE_FAILURE,
        detail="verdicts.0.verdict: verdict must be 0 or 1, got True",
    ),
    Case(
        "verdict-null",
        _verdicts_json(("a", "r", None)),
        1,
        R.PARSE_FAILURE,
        detail="verdicts.0.verdict: verdict must be 0 or 1, got None",
    ),
    Case(
        "verdict-maybe",
        _verdicts_json(("a", "r", 1), ("b", "unclear", "maybe"), ("c", "r", 0)),
        3,
        R.PARSE_FAILURE,
        detail="verdicts.1.verdict: verdict must be 0 or 1, got 'maybe'",
    ),
    Case(
        "verdict-missing",
        '{"verdicts": [{"statement": "a", "reason": "supported"}]}',
        1,
        R.PARSE_FAILURE,
        detail="verdicts.0.verdict: field required",
    ),
    Case(
        "bare-list-with-2",
        "[1, 2, 0]",
        3,
        R.PARSE_FAILURE,
        detail="[1]: verdict must be 0 or 1, got 2",
    ),
    Case(
        "bare-list-with-float",
        "```json\n[1.0, 0.0]\n```",
        2,
        R.PARSE_FAILURE,
        detail="[0]: verdict must be 0 or 1, got 1.0",
    ),
    Case(
        "single-object-verdict-supported-word",
        '{"verdict": "supported", "reason": "yes"}',
        1,
        R.PARSE_FAILURE,
        detail="verdict: verdict must be 0 or 1, got 'supported'",
    ),
    # --- count mismatches --------------------------------------------------------------
    Case(
        "json-too-few",
        _verdicts_json(("a", "r", 1), ("b", "r", 0)),
        3,
        R.VERDICT_COUNT_MISMATCH,
        detail="2 verdicts for 3",
    ),
    Case("json-too-many", OURS_3, 2, R.VERDICT_COUNT_MISMATCH, detail="3 verdicts for 2"),
    Case("bare-list-too-many", "[1, 0, 1, 1]", 3, R.VERDICT_COUNT_MISMATCH),
    Case(
        "too-few-because-length-limit",
        _verdicts_json(("a", "r", 1)),
        3,
        R.TRUNCATED_OUTPUT,
        finish_reason="length",
    ),
    # --- legacy text form -------------------------------------------------------------
    Case("legacy-canonical", "Final verdict for each statement in order: Yes. No. Yes.", 3, [1, 0, 1]),
    Case(
        "legacy-after-reasoning",
        "1. Paris is the capital: the context says so.\n2. 40 million: the context says 2.1 "
        "million, no.\n\nFinal verdict for each statement in order: Yes. No.",
        2,
        [1, 0],
    ),
    Case(
        "legacy-lowercase-commas",
        "final verdict for each statement in order: yes, no, no",
        3,
        [1, 0, 0],
    ),
    Case(
        "legacy-shouting-no-spaces",
        "FINAL VERDICT FOR EACH STATEMENT IN ORDER:YES.NO.YES.",
        3,
        [1, 0, 1],
    ),
    Case(
        "legacy-bold-semicolons",
        "**Final verdicts for each statement in order:** Yes; Yes; No",
        3,
        [1, 1, 0],
    ),
    Case(
        "legacy-next-lines-numbered",
        "Final verdict for each statement in order:\n1. Yes\n2. No\n3. No\n\nNote: no other claims.",
        3,
        [1, 0, 0],
    ),
    Case(
        "legacy-prose-after-not-counted",
        "Final verdict for each statement in order: Yes. No. Yes. Nothing else to add, no.",
        3,
        [1, 0, 1],
    ),
    Case(
        "legacy-wrong-count",
        "Final verdict for each statement in order: Yes. No.",
        3,
        R.VERDICT_COUNT_MISMATCH,
        detail="2 verdicts for 3",
    ),
    Case(
        "legacy-maybe-stops-the-run",
        "Final verdict for each statement in order: Yes. Maybe. No.",
        3,
        R.VERDICT_COUNT_MISMATCH,
        detail="1 verdicts for 3",
    ),
    Case(
        "legacy-no-yes-no",
        "Final verdict for each statement in order: Partially. Unclear.",
        2,
        R.PARSE_FAILURE,
        detail="legacy verdict line has no yes/no",
    ),
    # --- free verdict lines -------------------------------------------------------------
    Case("verdict-line-single", "The context states this directly.\n\nVerdict: yes", 1, [1]),
    Case(
        "verdict-line-bold",
        "**Verdict:** No — the context never mentions a date.",
        1,
        [(0, "the context never mentions a date.")],
    ),
    Case(
        "claude-bold-statement-lines",
        "**Statement 1:** Yes\n**Statement 2:** No\n**Statement 3:** Yes",
        3,
        [1, 0, 1],
    ),
    Case(
        "llama-numbered-with-reasons",
        "1. Yes - the context says Paris is the capital.\n2. No - the population is wrong.\n",
        2,
        [(1, "the context says Paris is the capital."), (0, "the population is wrong.")],
    ),
    Case(
        "qwen-statement-then-verdict-lines",
        "Statement 1: Paris is the capital of France.\nVerdict: Yes\n\n"
        "Statement 2: Paris has 40 million inhabitants.\nVerdict: No\n",
        2,
        [1, 0],
    ),
    Case(
        "statement-with-parenthetical",
        "- Statement 1 (Paris is the capital): Supported\n- Statement 2 (40 million): Not supported",
        2,
        [1, 0],
    ),
    Case("verdict-line-1-0", "Verdict: 1\n", 1, [1]),
    Case(
        "verdict-for-statement-lines",
        "Verdict for statement 1: yes\nVerdict for statement 2: NO.",
        2,
        [1, 0],
    ),
    Case("statement-n-verdict-lines", "Statement 1 verdict: No\nStatement 2 verdict: Yes", 2, [0, 1]),
    Case("numbered-paren-lowercase", "1) yes\n2) no\n3) yes", 3, [1, 0, 1]),
    Case("quoted-bold-claim-line", "> **Claim 1:** Unsupported", 1, [0]),
    Case(
        "verdict-line-1.0-is-not-1",
        "Verdict: 1.0",
        1,
        R.PARSE_FAILURE,
        detail="verdict line 'Verdict: 1.0' is not yes/no or 1/0",
    ),
    Case("verdict-line-2", "Verdict: 2", 1, R.PARSE_FAILURE, detail="'Verdict: 2'"),
    Case(
        "verdict-line-maybe",
        "Verdict: yes\nVerdict: maybe\nVerdict: no",
        2,
        R.PARSE_FAILURE,
        detail="'Verdict: maybe'",
    ),
    Case(
        "numbered-lines-with-gap",
        "Statement 1: Yes\nStatement 2: Partially\nStatement 3: No",
        2,
        R.PARSE_FAILURE,
        detail="numbered [1, 3]",
    ),
    Case(
        "verdict-lines-wrong-count",
        "Statement 1: Yes\nStatement 2: No",
        3,
        R.VERDICT_COUNT_MISMATCH,
    ),
    Case("bare-yes-is-not-a-verdict", "Yes", 1, R.PARSE_FAILURE, detail="no verdicts found"),
    Case(
        "apology-then-verdict-lines",
        "I apologize for the confusion earlier. Here are the verdicts:\nStatement 1: No\nStatement 2: Yes",
        2,
        [0, 1],
    ),
    # --- refusals ----------------------------------------------------------------------
    Case(
        "refusal-cannot-determine",
        "I cannot determine whether these statements are supported without the context.",
        2,
        R.REFUSAL,
    ),
    Case("refusal-im-sorry", "I'm sorry, but I can't help with that request.", 2, R.REFUSAL),
    Case("refusal-curly-apostrophe", "I’m unable to evaluate these statements.", 1, R.REFUSAL),
    Case(
        "refusal-as-an-ai",
        "As an AI language model, I do not have access to the source document.",
        3,
        R.REFUSAL,
    ),
    Case(
        "refusal-mid-sentence",
        "Based on the information provided, I cannot determine the answer.",
        2,
        R.REFUSAL,
    ),
    Case(
        "refusal-not-possible",
        "It is not possible to determine this from the context given.",
        1,
        R.REFUSAL,
    ),
    Case("refusal-backend-content-filter", OURS_3, 3, R.REFUSAL, finish_reason="content_filter"),
    # --- empty and truncated ---------------------------------------------------------
    Case("empty-string", "", 3, R.EMPTY_OUTPUT),
    Case("none", None, 3, R.EMPTY_OUTPUT),
    Case("whitespace-only", "  \n\t\n ", 3, R.EMPTY_OUTPUT),
    Case("empty-with-length", "", 3, R.TRUNCATED_OUTPUT, finish_reason="length"),
    Case(
        "truncated-mid-string",
        '{"verdicts": [{"statement": "Paris is the capital of France.", "reason": "The cont',
        2,
        R.TRUNCATED_OUTPUT,
    ),
    Case(
        "truncated-mid-array",
        '{"verdicts": [{"statement": "a", "reason": "r", "verdict": 1}, {"statement": "b", "verdict": 0},',
        3,
        R.TRUNCATED_OUTPUT,
    ),
    Case(
        "truncated-mid-fence",
        'Here you go:\n```json\n{\n  "verdicts": [\n    {"statement": "a", "verdict": 1},\n    {"stat',
        2,
        R.TRUNCATED_OUTPUT,
    ),
    Case(
        "truncated-inner-objects-not-used",
        '{"verdicts": [{"statement": "a", "verdict": 1}',
        1,
        R.TRUNCATED_OUTPUT,
    ),
    Case(
        "finish-length-prose-only",
        "Let me carefully think through each statement. First, the context says that",
        2,
        R.TRUNCATED_OUTPUT,
        finish_reason="length",
    ),
    Case(
        "prose-without-verdicts",
        "The statements are mostly consistent with the context.",
        2,
        R.PARSE_FAILURE,
        detail="no verdicts found",
    ),
]


def _check(result: list[ParsedVerdict] | Unparsed, case: Case) -> None:
    if isinstance(case.expected, UnscoredReason):
        assert isinstance(result, Unparsed), result
        assert result.reason == case.expected, result
        if case.detail is not None:
            assert case.detail in result.detail, result.detail
        return
    assert isinstance(result, list), result
    expected = case.expected
    if expected and isinstance(expected[0], tuple):
        assert [(v.value, v.reason) for v in result] == expected
    else:
        assert [v.value for v in result] == expected
    assert all(type(v.value) is int and v.value in (0, 1) for v in result)


def test_corpus_is_large_and_ids_unique() -> None:
    assert len(CORPUS) >= 50
    assert len({c.id for c in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_parse_verdicts(case: Case) -> None:
    _check(parse_verdicts(case.text, case.n, finish_reason=case.finish_reason), case)


# --- parse_output with a small model ------------------------------------------------


class Judgement(BaseModel):
    reason: str
    verdict: Binary


OUTPUT_CASES: list[tuple[str, str | None, Judgement | UnscoredReason, str | None]] = [
    ("plain", '{"reason": "ok", "verdict": 1}', Judgement(reason="ok", verdict=1), None),
    (
        "string-no",
        '{"reason": "absent", "verdict": "no"}',
        Judgement(reason="absent", verdict=0),
        None,
    ),
    (
        "fence-and-preamble",
        'Sure! Here is the evaluation:\n```json\n{"reason": "ok", "verdict": "1"}\n```',
        Judgement(reason="ok", verdict=1),
        None,
    ),
    (
        "prose-around",
        'My answer is {"verdict": 0, "reason": "The context says {none}."} as requested.',
        Judgement(reason="The context says {none}.", verdict=0),
        None,
    ),
    (
        "refusal-plus-json",
        'I cannot be sure, but: {"reason": "likely", "verdict": 1}',
        Judgement(reason="likely", verdict=1),
        None,
    ),
    (
        "verdict-2",
        '{"reason": "r", "verdict": 2}',
        R.PARSE_FAILURE,
        "verdict: verdict must be 0 or 1, got 2",
    ),
    ("verdict-minus-1", '{"reason": "r", "verdict": -1}', R.PARSE_FAILURE, "got -1"),
    ("verdict-str-1.0", '{"reason": "r", "verdict": "1.0"}', R.PARSE_FAILURE, "got '1.0'"),
    ("verdict-float", '{"reason": "r", "verdict": 1.0}', R.PARSE_FAILURE, "got 1.0"),
    ("verdict-true", '{"reason": "r", "verdict": true}', R.PARSE_FAILURE, "got True"),
    ("verdict-null", '{"reason": "r", "verdict": null}', R.PARSE_FAILURE, "got None"),
    ("verdict-maybe", '{"reason": "r", "verdict": "maybe"}', R.PARSE_FAILURE, "got 'maybe'"),
    ("missing-reason", '{"verdict": 1}', R.PARSE_FAILURE, "reason: field required"),
    (
        "citation-list-then-bad-object",
        'See [1]. {"reason": "r", "verdict": 3}',
        R.PARSE_FAILURE,
        "verdict: verdict must be 0 or 1, got 3",
    ),
    ("bare-list", "[1]", R.PARSE_FAILURE, "Input should be a valid dictionary"),
    ("refusal", "I'm sorry, I can't evaluate this response.", R.REFUSAL, None),
    ("empty", "", R.EMPTY_OUTPUT, None),
    ("none", None, R.EMPTY_OUTPUT, None),
    ("truncated", '{"reason": "The answer cites the wro', R.TRUNCATED_OUTPUT, None),
    ("citation-then-truncated", 'See [1]. {"reason": "The answer', R.TRUNCATED_OUTPUT, None),
    ("no-json", "The answer is good.", R.PARSE_FAILURE, "no JSON found"),
]


@pytest.mark.parametrize(
    ("text", "expected", "detail"),
    [pytest.param(t, e, d, id=i) for i, t, e, d in OUTPUT_CASES],
)
def test_parse_output(text: str | None, expected: Judgement | UnscoredReason, detail: str | None) -> None:
    result = parse_output(text, Judgement)
    if isinstance(expected, Judgement):
        assert result == expected
        return
    assert isinstance(result, Unparsed), result
    assert result.reason == expected, result
    if detail is not None:
        assert detail in result.detail, result.detail


def test_parse_output_length_limit_without_json_is_truncated() -> None:
    result = parse_output("Let me think about", Judgement, finish_reason="length")
    assert isinstance(result, Unparsed)
    assert result.reason == R.TRUNCATED_OUTPUT


def test_parse_output_statement_verdicts_model() -> None:
    result = parse_output("```json\n" + OURS_3 + "\n```", StatementVerdicts)
    assert isinstance(result, StatementVerdicts)
    assert [v.verdict for v in result.verdicts] == [1, 0, 1]


# --- helpers ------------------------------------------------------------------------


def test_find_json_values_order_and_truncation() -> None:
    values, truncated = find_json_values('Intro [1, 0] then ```json\n{"a": 1}\n``` and {"b": [2]}')
    assert values == [{"a": 1}, [1, 0], {"b": [2]}]
    assert truncated is False
    values, truncated = find_json_values('{"a": 1} and then {"b": "cut')
    assert values == [{"a": 1}]
    assert truncated is True


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I cannot determine this.", True),
        ("Sorry, but I won't do that.", True),
        ("Unfortunately, I do not have the context.", True),
        ("Statement 1: Yes. The context is clear.", False),
        ("No. The claim cannot be verified.", False),
    ],
)
def test_looks_like_refusal(text: str, expected: bool) -> None:
    assert looks_like_refusal(text) is expected


# --- property: an invalid value is never a verdict ---------------------------------


def _binary_by_spec(value: object) -> int | None:
    """The verdict a value stands for, written out: int 0/1 or "0"/"1"/"yes"/"no"."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value in (0, 1) else None
    if isinstance(value, str):
        return {"0": 0, "1": 1, "yes": 1, "no": 0}.get(value.strip().lower())
    return None


VERDICT_VALUES = st.one_of(
    st.integers(min_value=-5, max_value=5),
    st.integers(),
    st.floats(allow_nan=False),
    st.sampled_from([0.0, 1.0, -1.0, 0.5, True, False, None, "1.0", "maybe", " yes ", "No", "01"]),
    st.text(max_size=6),
    st.sampled_from(["0", "1", "yes", "no", "YES", " 1", "true", "2", "-1"]),
)


def _assert_never_invented(result: list[ParsedVerdict] | Unparsed, value: object) -> None:
    expected = _binary_by_spec(value)
    if expected is None:
        assert isinstance(result, Unparsed), (value, result)
        assert result.reason == R.PARSE_FAILURE
    else:
        assert result == [ParsedVerdict(expected, "r")] or result == [ParsedVerdict(expected)]


@given(VERDICT_VALUES)
def test_property_object_verdict(value: object) -> None:
    text = json.dumps({"verdicts": [{"statement": "s", "reason": "r", "verdict": value}]})
    _assert_never_invented(parse_verdicts(text, 1), value)


@given(VERDICT_VALUES)
def test_property_bare_list_verdict(value: object) -> None:
    _assert_never_invented(parse_verdicts("Verdicts: " + json.dumps([value]), 1), value)


@given(VERDICT_VALUES)
def test_property_parse_output(value: object) -> None:
    result = parse_output(json.dumps({"reason": "r", "verdict": value}), Judgement)
    expected = _binary_by_spec(value)
    if expected is None:
        assert isinstance(result, Unparsed)
        assert result.reason == R.PARSE_FAILURE
    else:
        assert result == Judgement(reason="r", verdict=expected)


@given(st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False)))
def test_property_verdict_line_number(value: float) -> None:
    result = parse_verdicts(f"Verdict: {value}", 1)
    if isinstance(value, int) and value in (0, 1):
        assert result == [ParsedVerdict(value)]
    else:
        assert isinstance(result, Unparsed), (value, result)


# -- verdicts matched to the statements they name --------------------------------------

ASKED = (
    "The Eiffel Tower was completed in 1889.",
    "It is about 330 metres tall.",
    "It was designed by Gustave Eiffel's company.",
)


def _answer(*items: tuple[str, int]) -> str:
    return json.dumps({"verdicts": [{"statement": s, "reason": f"about {s[:12]}", "verdict": v} for s, v in items]})


def _values(found: Any) -> list[tuple[int, str]]:
    assert not isinstance(found, Unparsed), found
    return [(v.value, v.reason) for v in found]


@pytest.mark.parametrize(
    "order",
    [(2, 1, 0), (1, 0, 2), (0, 2, 1), (2, 0, 1)],
)
def test_verdicts_out_of_order_are_put_with_the_statements_they_name(order: tuple[int, ...]) -> None:
    value = {0: 1, 1: 0, 2: 1}
    text = _answer(*((ASKED[i], value[i]) for i in order))
    found = parse_verdicts(text, 3, statements=ASKED)
    assert _values(found) == [(value[i], f"about {ASKED[i][:12]}") for i in range(3)]


@pytest.mark.parametrize(
    "named",
    [
        (
            "the eiffel tower was completed in 1889",
            "IT IS ABOUT 330 METRES TALL",
            "It was designed by Gustave Eiffel’s company",
        ),
        (
            "1. The Eiffel Tower was completed in 1889.",
            "2) It is about 330 metres tall.",
            "Statement 3: It was designed by Gustave Eiffel's company.",
        ),
        (
            "The Eiffel Tower was finished in 1889.",
            "The tower is about 330 metres tall.",
            "Gustave Eiffel's company designed it.",
        ),
        ("The Eiffel Tower was completed in 1889.", "", "It was designed by Gustave Eiffel's company."),
    ],
    ids=["case-and-punctuation", "numbered", "reworded", "one-unnamed"],
)
def test_verdicts_in_order_that_name_their_statements_loosely_are_kept_in_order(named: tuple[str, ...]) -> None:
    text = _answer(*zip(named, (1, 0, 1), strict=True))
    assert [v for v, _ in _values(parse_verdicts(text, 3, statements=ASKED))] == [1, 0, 1]


@pytest.mark.parametrize(
    ("named", "said"),
    [
        (("x", "x", "x"), "verdict 1 is for 'x', which is not one of the 3 statements asked"),
        ((ASKED[0], "The sky is green.", ASKED[2]), "verdict 2 is for 'The sky is green.'"),
        ((ASKED[0], ASKED[0], ASKED[2]), "verdict 2 ('The Eiffel Tower was completed in 1889.') names a statement"),
        ((ASKED[1], "", ASKED[0]), "verdict 2 names no statement"),
    ],
    ids=["placeholders", "another-statement", "one-named-twice", "unnamed-among-moved"],
)
def test_verdicts_that_do_not_name_the_statements_asked_one_to_one_are_a_parse_failure(
    named: tuple[str, ...], said: str
) -> None:
    found = parse_verdicts(_answer(*zip(named, (1, 0, 1), strict=True)), 3, statements=ASKED)
    assert isinstance(found, Unparsed) and found.reason is UnscoredReason.PARSE_FAILURE
    assert said in found.detail, found.detail


def test_verdicts_naming_nothing_are_taken_in_order() -> None:
    lines = "1. yes: completed in 1889\n2. no: no height given\n3. yes: designed by it"
    assert [v for v, _ in _values(parse_verdicts(lines, 3, statements=ASKED))] == [1, 0, 1]
    bare = json.dumps({"verdicts": [1, 0, 1]})
    assert [v for v, _ in _values(parse_verdicts(bare, 3, statements=ASKED))] == [1, 0, 1]
