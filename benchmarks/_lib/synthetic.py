"""Synthetic RAG samples (seeded, generated lazily) and the deterministic answers a fake OpenAI server gives them.

A statement is an answer sentence; it is supported when the contexts contain it verbatim.
``throughput.py`` and ``faults.py`` time and break runs over these, so their figures
measure the run, not a judge.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from typing import Any

SEED = 20240611


_PREFIXES = ("Alder", "Birch", "Cedar", "Delta", "Ember", "Fjord", "Garnet", "Harbor", "Iris", "Juniper")


_KINDS = ("Institute", "Works", "Observatory", "Cooperative", "Foundry", "Archive", "Clinic", "Studio")


_CITIES = ("Lisbon", "Oslo", "Kyoto", "Quito", "Dakar", "Perth", "Tallinn", "Cusco", "Hanoi", "Malmo")


_FIELDS = ("soil chemistry", "bridge design", "glass recycling", "bird migration", "tidal power", "paper conservation")


_PEOPLE = ("Ana Ruiz", "Bo Lindqvist", "Chidi Okeke", "Dana Novak", "Emil Sato", "Farah Haddad", "Goran Petrov")


def _facts(rng: random.Random, name: str) -> list[tuple[str, str]]:
    """(true sentence, false sentence) pairs about one entity."""
    year, other_year = rng.sample(range(1890, 2020), 2)
    city, other_city = rng.sample(_CITIES, 2)
    field, other_field = rng.sample(_FIELDS, 2)
    person, other_person = rng.sample(_PEOPLE, 2)
    staff, other_staff = rng.sample(range(12, 900), 2)
    return [
        (f"{name} was founded in {year}.", f"{name} was founded in {other_year}."),
        (f"{name} is based in {city}.", f"{name} is based in {other_city}."),
        (f"{name} specializes in {field}.", f"{name} specializes in {other_field}."),
        (f"{name} is led by {person}.", f"{name} is led by {other_person}."),
        (f"{name} employs {staff} people.", f"{name} employs {other_staff} people."),
    ]


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def make_sample(rng: random.Random, index: int) -> dict[str, Any]:
    """One RAG sample: a question, an answer of 2-4 sentences (about 1 in 4 unsupported), 1-2 contexts."""
    name = f"the {rng.choice(_PREFIXES)} {rng.choice(_KINDS)} {index}"
    facts = _facts(rng, name)
    rng.shuffle(facts)
    context_sentences = [_upper_first(true) for true, _ in facts]
    split = rng.randint(2, 4) if rng.random() < 0.5 else len(context_sentences)
    contexts = [_upper_first(" ".join(context_sentences[:split]))]
    if split < len(context_sentences):
        contexts.append(_upper_first(" ".join(context_sentences[split:])))
    answer_facts = facts[: rng.randint(2, 4)]
    sentences = [_upper_first(false if rng.random() < 0.25 else true) for true, false in answer_facts]
    return {
        "id": f"s{index}",
        "question": f"What do you know about {name}?",
        "answer": " ".join(sentences),
        "contexts": contexts,
    }


def iter_samples(n: int, seed: int = SEED) -> Iterator[dict[str, Any]]:
    """``n`` samples, generated lazily with a fixed seed (the same ones on every call)."""
    rng = random.Random(seed)
    for index in range(n):
        yield make_sample(rng, index)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    """The sentences of a synthetic answer (they never contain an inner full stop)."""
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def _supported(statement: str, context: str) -> int:
    return int(statement.lower() in context.lower())


def _block(text: str, tag: str) -> str:
    return text.split(f"<{tag}>\n", 1)[1].split(f"\n</{tag}>", 1)[0]


def _numbered(block: str) -> list[str]:
    return [line.split("] ", 1)[1] for line in block.splitlines() if line.startswith("[")]


def _ragas_input(text: str) -> dict[str, Any]:
    """The JSON after Ragas' last ``input:`` marker (its prompts end with ``input: {...}\\nOutput:``)."""
    data: dict[str, Any] = json.loads(text.rsplit("input: ", 1)[1].rsplit("\nOutput:", 1)[0])
    return data


def responder(body: dict[str, Any]) -> str:
    """Deterministic answers to assay's and Ragas' faithfulness prompts.

    Statements are the answer's sentences; a statement is supported when the contexts
    contain it verbatim (case-insensitively). Anything else gets the server's default.
    """
    from assay.testing._openai_server import default_responder

    messages = [m for m in body.get("messages") or [] if isinstance(m.get("content"), str)]
    # The first user message is the original prompt, also on re-asks; Ragas' legacy prompts have no system message.
    user = next((m["content"] for m in messages if m.get("role") == "user"), "")
    everything = "\n".join(m["content"] for m in messages)
    response_format = body.get("response_format") or {}
    schema_name = (response_format.get("json_schema") or {}).get("name")
    if schema_name == "Statements":
        return json.dumps({"statements": sentences(_block(user, "answer"))})
    if schema_name == "VerdictList":
        context = "\n".join(_numbered(_block(user, "context")))
        items = [
            {"statement": s, "reason": "checked against the context", "verdict": _supported(s, context)}
            for s in _numbered(_block(user, "statements"))
        ]
        return json.dumps({"verdicts": items})
    if "StatementGeneratorOutput" in everything:
        return json.dumps({"statements": sentences(_ragas_input(user)["answer"])})
    if "NLIStatementOutput" in everything:
        data = _ragas_input(user)
        answers = [
            {"statement": s, "reason": "checked against the context", "verdict": _supported(s, data["context"])}
            for s in data["statements"]
        ]
        return json.dumps({"statements": answers})
    return default_responder(body)


def to_sample(record: dict[str, Any]) -> Any:
    from assay import Sample

    return Sample(
        id=record["id"], question=record["question"], answer=record["answer"], contexts=tuple(record["contexts"])
    )
