"""What the fake servers answer: every prompt assay sends, by a word rule; anything else, a minimal valid value.

:func:`word_overlap_answer` (the default answer of :class:`~assay.testing.FakeOpenAIServer`
and of ``assay judges fake``) turns a chat-completions request body into the answer text:
deterministic and meaningful, with no model.
It reads the tagged data blocks of the last user message (``<context>``, ``<statement>``,
``<answer>``...) and the requested JSON schema, and answers in that schema by these rules.

**Words.** A text's *words* are its runs of letters and digits, lowercased (``6,400 km``
is ``6``, ``400``, ``km``). Its *content words* are its words minus a short list of
function words (:data:`FUNCTION_WORDS`: articles, forms of *be* and *have*, prepositions,
pronouns); ``not`` and ``no`` are content words. Words match exactly: no stemming, no
synonyms (``completed`` is not ``constructed``, ``metre`` is not ``metres``).

**Rules**, one per question assay asks:

- *Statements of an answer* (faithfulness, ``llm`` decomposer): its sentences (split after
  ``.``, ``!`` or ``?``). *One sentence to rewrite* (``anchored``, ``hybrid``): the
  sentence itself.
- *Is a statement supported by the context* (one at a time or all at once): 1 when every
  content word of the statement is a word of the context, else 0; the reason names the
  missing words.
- *Was a context chunk useful for the answer* (context precision): 1 when the chunk holds a
  content word of the answer that the question does not.
- *Does the answer address the question* (answer relevancy): relevant when they share a
  content word; noncommittal when the answer says ``don't know``, ``do not know``, ``not
  sure``, ``no idea``, ``cannot tell`` or ``can't tell``.
- *Requirements of a goal* (agent goal accuracy): the goal's sentences (of every user turn
  without a reference). *Is a requirement met*: ``met`` when every content word of it is
  in the calls that did not fail or the final reply, citing the calls that hold one; else
  ``not met`` (never ``cannot tell``).
- *The goal and end state of a trace* (holistic): the user's turns, and the tool calls
  with their results. *Does the end state achieve the goal*: the statement rule.
- *Graders* (binary, templated, range): the criterion is the grader's ``Criterion:``
  section (a templated grader: its instructions, the user message outside the data
  blocks); the response is the last assistant turn (a templated grader: ``<answer>``).
  PASS (verdict 1) when the response holds every double-quoted phrase of the criterion,
  or, for a criterion without quotes, shares a content word with it; else FAIL. Never NA.
  A range grader gives the lowest level plus the share of the criterion's content words
  in the response times the scale's span, rounded to a level.
- *Is a retrieved passage relevant* (retrieval's LLM judge): 1 when at least half of the
  expected passage's content words are words of the retrieved one.
- Anything else: a minimal valid instance of the requested schema
  (:func:`~assay.testing.minimal_instance`), ``{}`` in JSON mode, ``OK`` as plain text.

It is a stand-in for a judge, not a judge: its agreement with people was never measured
and never will be, and ``assay judges fake`` serves it under a model name that says so
(:data:`FAKE_JUDGE_MODEL`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = [
    "FAKE_JUDGE_MODEL",
    "FUNCTION_WORDS",
    "content_words",
    "minimal_instance",
    "minimal_responder",
    "request_schema",
    "resolve_ref",
    "supported",
    "word_overlap_answer",
]

FAKE_JUDGE_MODEL: Final = "fake-word-overlap"
"""The model name ``assay judges fake`` answers as: ``--judge openai:fake-word-overlap``."""

FUNCTION_WORDS: Final = frozenset(
    (  # noqa: SIM905 (a paragraph of words reads better than a column of them)
        "a an the and or but if so as than then that this these those there here is are was were be been "
        "being am do does did has have had having will would shall should can could may might must of in on "
        "at to for from by with into onto about over under up down out off it its it's he she they them his "
        "her their we you your our i me my us him which who whom what "
    ).split()
)
"""Words that carry no content for the rules (negations are not among them)."""

_STRING_FORMATS: Final[Mapping[str, str]] = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "email": "judge@example.com",
    "uri": "https://example.com/",
}


def minimal_instance(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """A small JSON value valid against ``schema``, as pydantic emits schemas.

    Handles ``object``, ``array``, ``string``, ``integer``, ``number``, ``boolean``,
    ``null``, ``enum`` (first value), ``const``, ``$ref`` into ``$defs``, ``anyOf`` /
    ``oneOf`` (first non-null branch) and ``allOf`` (first branch). Objects get every
    property (its ``default`` when it has one); arrays get ``max(minItems, 1)`` items
    (capped by ``maxItems``); strings honour ``minLength`` and common formats.

    Args:
        schema: The (sub)schema to satisfy.
        root: The schema holding ``$defs``; defaults to ``schema`` itself.

    Returns:
        A JSON-serializable value.

    Raises:
        ValueError: A ``$ref`` points outside the root document.
    """
    root = schema if root is None else root
    if "$ref" in schema:
        return minimal_instance(resolve_ref(str(schema["$ref"]), root), root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return next(iter(schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            branches: list[Mapping[str, Any]] = list(schema[key])
            non_null = [b for b in branches if b.get("type") != "null"]
            return minimal_instance((non_null or branches)[0], root)
    if "allOf" in schema:
        return minimal_instance(next(iter(schema["allOf"])), root)
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"] or ["null"]
        kind = kinds[0]
    if kind == "object" or (kind is None and "properties" in schema):
        properties: Mapping[str, Mapping[str, Any]] = schema.get("properties", {})
        return {
            name: sub["default"] if "default" in sub else minimal_instance(sub, root)
            for name, sub in properties.items()
        }
    if kind == "array":
        count = max(int(schema.get("minItems", 0)), 1)
        if "maxItems" in schema:
            count = min(count, int(schema["maxItems"]))
        items: Mapping[str, Any] = schema.get("items", {})
        return [minimal_instance(items, root) for _ in range(count)]
    if kind == "string":
        if schema.get("format") in _STRING_FORMATS:
            return _STRING_FORMATS[str(schema["format"])]
        return "x" * max(int(schema.get("minLength", 0)), 1)
    if kind in ("integer", "number"):
        return _minimal_number(schema, integer=kind == "integer")
    if kind == "boolean":
        return False
    return None


def resolve_ref(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any]:
    """The subschema a local ``$ref`` (``#/$defs/Name``) of ``root`` points at."""
    if not ref.startswith("#/"):
        raise ValueError(f"only local $ref values are supported, got {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    if not isinstance(node, Mapping):
        raise ValueError(f"$ref {ref!r} does not point at a schema")
    return node


def _minimal_number(schema: Mapping[str, Any], *, integer: bool) -> int | float:
    step = 1.0 if integer else 0.5
    value = 0.0
    if "minimum" in schema:
        value = max(value, float(schema["minimum"]))
    if "exclusiveMinimum" in schema and value <= float(schema["exclusiveMinimum"]):
        value = float(schema["exclusiveMinimum"]) + step
    if "maximum" in schema:
        value = min(value, float(schema["maximum"]))
    if "exclusiveMaximum" in schema and value >= float(schema["exclusiveMaximum"]):
        value = float(schema["exclusiveMaximum"]) - step
    return int(value) if integer else value


def request_schema(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The JSON schema a chat-completions request asks its answer to follow, if any."""
    response_format = body.get("response_format")
    if not isinstance(response_format, Mapping):
        return None
    if response_format.get("type") != "json_schema":
        return None
    spec = response_format.get("json_schema")
    if not isinstance(spec, Mapping):
        return None
    schema = spec.get("schema")
    return schema if isinstance(schema, Mapping) else None


def minimal_responder(body: Mapping[str, Any]) -> str:
    """A minimal valid instance of the requested JSON schema, ``{}`` for JSON mode, else ``OK``."""
    schema = request_schema(body)
    if schema is not None:
        return json.dumps(minimal_instance(schema))
    response_format = body.get("response_format")
    if isinstance(response_format, Mapping) and response_format.get("type") == "json_object":
        return "{}"
    return "OK"


_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_BLOCK = re.compile(r"<(\w+)>\n(.*?)\n</\1>", re.DOTALL)
_NUMBERED = re.compile(r"^\[(?:call )?\d+\] ?", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_EVASIVE = ("don't know", "do not know", "not sure", "no idea", "cannot tell", "can't tell")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def content_words(text: str) -> list[str]:
    """The content words of ``text``, in order, once each (see the module docstring)."""
    return list(dict.fromkeys(w for w in _words(text) if w not in FUNCTION_WORDS))


def supported(claim: str, evidence: str) -> tuple[bool, list[str]]:
    """Whether every content word of ``claim`` is a word of ``evidence``, and the ones that are not."""
    found = set(_words(evidence))
    missing = [w for w in content_words(claim) if w not in found]
    return not missing, missing


def _why(missing: Sequence[str], where: str) -> str:
    if not missing:
        return f"every content word is in the {where}"
    return f"not in the {where}: {', '.join(missing)}"


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def _blocks(text: str) -> dict[str, str]:
    return {name: body for name, body in _BLOCK.findall(text)}


def _unnumbered(text: str) -> str:
    """A rendered list (``[1] first`` and ``[2] second`` on their lines) as plain text."""
    return _NUMBERED.sub("", text)


def _message_text(message: object) -> str:
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def _properties(schema: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if schema is None:
        return {}
    node = resolve_ref(str(schema["$ref"]), schema) if "$ref" in schema else schema
    properties = node.get("properties")
    return properties if isinstance(properties, Mapping) else {}


def _enum(prop: Mapping[str, Any]) -> list[Any]:
    values = prop.get("enum")
    if isinstance(values, list):
        return values
    if "const" in prop:
        return [prop["const"]]
    for key in ("anyOf", "oneOf"):
        branches = prop.get(key)
        if isinstance(branches, list):
            return [v for b in branches if isinstance(b, Mapping) for v in _enum(b)]
    return []


def _max_items(prop: Mapping[str, Any]) -> int | None:
    value = prop.get("maxItems")
    return int(value) if isinstance(value, int) else None


def _statements(text: str, prop: Mapping[str, Any]) -> list[str]:
    items = _sentences(_unnumbered(text))
    cap = _max_items(prop)
    return items[:cap] if cap is not None else items


def _verdict(claim: str, evidence: str, where: str) -> dict[str, Any]:
    ok, missing = supported(claim, evidence)
    return {"verdict": int(ok), "reason": _why(missing, where)}


def _batch(blocks: Mapping[str, str]) -> dict[str, Any]:
    context = _unnumbered(blocks["context"])
    items: list[str] = []
    for line in blocks["statements"].split("\n"):
        if re.match(r"\[\d+\] ", line):
            items.append(line.split("] ", 1)[1])
        elif items:  # a statement that spans lines
            items[-1] += "\n" + line
    verdicts = []
    for item in items:
        ok, missing = supported(item, context)
        verdicts.append({"statement": item, "reason": _why(missing, "context"), "verdict": int(ok)})
    return {"verdicts": verdicts}


def _chunk(blocks: Mapping[str, str]) -> dict[str, Any]:
    asked = set(content_words(blocks["question"]))
    chunk = set(_words(blocks["context"]))
    shared = [w for w in content_words(blocks["answer"]) if w not in asked and w in chunk]
    reason = (
        f"the chunk holds {', '.join(shared)} of the answer"
        if shared
        else "the chunk holds none of the answer's own words"
    )
    return {"verdict": int(bool(shared)), "reason": reason}


def _relevance(blocks: Mapping[str, str]) -> dict[str, Any]:
    answer = blocks["answer"]
    shared = [w for w in content_words(blocks["question"]) if w in set(_words(answer))]
    text = answer.lower().replace("\u2019", "'")
    evasive = any(phrase in text for phrase in _EVASIVE)
    reason = f"shares {', '.join(shared)} with the question" if shared else "shares no content word with the question"
    return {"relevant": int(bool(shared)), "noncommittal": int(evasive), "reason": reason}


def _calls(text: str) -> list[tuple[int, str, bool]]:
    """``(number, text, failed)`` of each ``[call N] KIND: ...`` entry of a rendered call list."""
    entries: list[tuple[int, str, bool]] = []
    for chunk in re.split(r"(?m)^(?=\[call \d+\] )", text):
        opened = re.match(r"\[call (\d+)\] ([^:]*):", chunk)
        if opened:
            entries.append((int(opened[1]), chunk[opened.end() :], "failed" in opened[2].lower()))
    return entries


def _requirement(blocks: Mapping[str, str], prop: Mapping[str, Any]) -> dict[str, Any]:
    requirement = blocks["requirement"]
    done = [(n, text) for n, text, failed in _calls(blocks.get("calls", "")) if not failed]
    evidence = " ".join(text for _, text in done) + " " + blocks.get("final_reply", "")
    ok, missing = supported(requirement, evidence)
    wanted = set(content_words(requirement))
    cited = [n for n, text in done if wanted & set(_words(text))]
    cap = _max_items(prop)
    return {
        "verdict": "met" if ok else "not met",
        "calls": cited[:cap] if cap is not None else cited,
        "reason": _why(missing, "calls that succeeded or the final reply"),
    }


def _goal_and_end_state(trace: str) -> dict[str, Any]:
    user, done = [], []
    for line in trace.splitlines():
        body = _NUMBERED.sub("", line, count=1)
        if body.startswith("USER:"):
            user.append(body.removeprefix("USER:").strip())
        elif body.startswith(("ASSISTANT CALLS", "TOOL RESULT")):
            done.append(body)
    return {
        "user_goal": " ".join(user) or "(the user asked for nothing)",
        "end_state": "\n".join(done) or "no tool was called",
    }


def _criterion(system: str, user: str, blocks: Mapping[str, str]) -> tuple[str, str]:
    """The grader's criterion and the response it grades."""
    if "conversation" in blocks:
        found = re.search(r"Criterion:\n(.*?)\n\n", system, re.DOTALL)
        criterion = found[1] if found else ""
        try:
            turns = json.loads(blocks["conversation"])
        except json.JSONDecodeError:
            turns = []
        said = [str(t.get("content") or "") for t in turns if isinstance(t, Mapping) and t.get("role") == "assistant"]
        return criterion, said[-1] if said else ""
    return _BLOCK.sub(" ", user), blocks.get("answer", "")


def _grade(system: str, user: str, blocks: Mapping[str, str], properties: Mapping[str, Any]) -> dict[str, Any]:
    criterion, response = _criterion(system, user, blocks)
    quoted = re.findall(r'"([^"]+)"', criterion)
    have = set(_words(response))
    if "score" in properties:
        levels = sorted(int(v) for v in _enum(properties["score"]))
        wanted = content_words(criterion)
        share = sum(w in have for w in wanted) / len(wanted) if wanted else 0.0
        level = levels[0] + round(share * (levels[-1] - levels[0]))
        score = min(levels, key=lambda v: abs(v - level))
        return {"reasoning": f"{share:.0%} of the criterion's content words are in the response", "score": score}
    if quoted:
        absent = [q for q in quoted if not supported(q, response)[0]]
        passed = not absent
        reasoning = "it says every quoted phrase" if passed else f"it does not say {', '.join(map(repr, absent))}"
    else:
        shared = [w for w in content_words(criterion) if w in have]
        passed = bool(shared)
        reasoning = (
            f"it shares {', '.join(shared)} with the criterion" if passed else "it shares no word with the criterion"
        )
    if "label" in properties:
        return {"reasoning": reasoning, "label": "PASS" if passed else "FAIL"}
    return {"reasoning": reasoning, "verdict": int(passed)}


def _retrieval(blocks: Mapping[str, str]) -> dict[str, Any]:
    expected = content_words(blocks["expected"])
    retrieved = set(_words(blocks["retrieved"]))
    found = [w for w in expected if w in retrieved]
    ok = bool(expected) and 2 * len(found) >= len(expected)
    return {"reason": f"{len(found)} of the expected passage's {len(expected)} content words", "verdict": int(ok)}


def _rule_answer(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The answer by the module's rules, or ``None`` when no rule covers the request."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return None
    user = _message_text(messages[-1])
    system = next((_message_text(m) for m in messages if isinstance(m, Mapping) and m.get("role") == "system"), "")
    blocks = _blocks(user)
    properties = _properties(request_schema(body))
    if "reasoning" in properties:
        return _grade(system, user, blocks, properties)
    if "sentence" in blocks:
        return {"statements": [blocks["sentence"].strip()]}
    if "statements" in blocks and "context" in blocks:
        return _batch(blocks)
    if "statement" in blocks and "context" in blocks:
        return _verdict(blocks["statement"], _unnumbered(blocks["context"]), "context")
    if "requirement" in blocks:
        return _requirement(blocks, properties.get("calls", {}))
    if "goal" in blocks and "end_state" in blocks:
        return _verdict(blocks["goal"], blocks["end_state"], "end state")
    if "goal" in blocks or "user_turns" in blocks:
        text = blocks.get("goal") or blocks["user_turns"]
        return {"requirements": _statements(text, properties.get("requirements", {}))}
    if "trace" in blocks:
        return _goal_and_end_state(blocks["trace"])
    if {"query", "expected", "retrieved"} <= blocks.keys():
        return _retrieval(blocks)
    if {"question", "answer", "context"} <= blocks.keys():
        return _chunk(blocks)
    if "answer" in blocks and "statements" in properties:
        return {"statements": _statements(blocks["answer"], properties["statements"])}
    if {"question", "answer"} <= blocks.keys():
        return _relevance(blocks)
    return None


def word_overlap_answer(body: dict[str, Any]) -> str:
    """The answer text to one chat-completions request body, by the rules of this module.

    A property of the requested schema that the rule does not give (a custom sub-metric's
    extra field) is filled with a minimal valid value.
    """
    answer = _rule_answer(body)
    if answer is None:
        return minimal_responder(body)
    schema = request_schema(body)
    for name, prop in _properties(schema).items():
        if name not in answer and isinstance(prop, Mapping) and schema is not None:
            answer[name] = prop["default"] if "default" in prop else minimal_instance(prop, schema)
    return json.dumps(answer, ensure_ascii=False)
