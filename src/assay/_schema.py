"""JSON schemas of output models, computed once per class.

pydantic rebuilds a model's JSON schema on every ``model_json_schema()`` call (about 1-2 ms
for a verdict list); judge calls need it for the prompt, the backend's structured-output
parameter and the cache key, thousands of times a run. Models are classes, so the schema
is cached per class. Callers must not mutate the returned dict (copy it first).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from pydantic import BaseModel

__all__ = ["schema_json", "schema_of"]


@cache
def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """``model.model_json_schema()``, computed once per class (treat as read-only)."""
    return model.model_json_schema()


@cache
def schema_json(model: type[BaseModel]) -> str:
    """The schema as compact, key-sorted JSON (for prompts and cache keys)."""
    return json.dumps(schema_of(model), ensure_ascii=False, sort_keys=True)
