"""Agent traces in the shapes other tools write them, converted to assay's one shape.

A trace reaches assay as a sequence of :class:`~assay.Message`. :func:`load_trace` builds
that sequence from any of these formats (:data:`TRACE_FORMATS`), detecting which one it
is; :class:`~assay.Sample` calls it on its ``trace`` field, so a dataset row's ``trace``
(or ``messages``) column may hold any of them:

- ``openai_chat``: OpenAI Chat Completions messages (``role``, ``content``,
  ``tool_calls`` with JSON-string ``function.arguments``, ``tool`` messages with
  ``tool_call_id``); also assay's own shape (``tool_calls`` as ``{"name", "arguments"}``).
  A ``{"messages": [...]}`` request is accepted too.
- ``openai_responses``: OpenAI Responses API items (``message`` with ``input_text`` /
  ``output_text`` parts, ``function_call`` with ``call_id``/``name``/``arguments``,
  ``function_call_output``, ``reasoning``); a list of items, a response object
  (``output``) or a request-and-response object (``instructions``, ``input``, ``output``).
- ``anthropic``: Anthropic Messages content blocks (``text``, ``tool_use``,
  ``tool_result`` with string or block content and ``is_error``, ``thinking``); a list of
  messages or a request ``{"system": ..., "messages": [...]}``.
- ``langchain``: LangChain message dicts, ``messages_to_dict``'s
  ``{"type": "human" | "ai" | "tool" | "system", "data": {...}}`` (and ``dumpd``'s
  ``{"lc": 1, "type": "constructor", ...}``).
- ``openinference``: OpenInference spans in an OpenTelemetry OTLP JSON export
  (``resourceSpans[].scopeSpans[].spans[]``), read in start-time order: LLM spans give
  the messages (``llm.input_messages.N.message.*`` / ``llm.output_messages.N...``), TOOL
  spans the tool calls and results (``tool.name``, ``input.value``, ``output.value``); an
  AGENT span's input and output stand in for the conversation when there is no LLM span.

What every format becomes (decisions written down in ``docs/design/traces.md``):

- An assistant turn is one message: its text (text parts joined by a newline) and its
  tool calls, in order. Responses items of one turn (a ``message`` and the
  ``function_call`` items after it) are merged; so are Anthropic blocks of one message.
- Tool-call arguments become a JSON object; a string that is not a JSON object is an
  error naming where it is.
- A tool result is a ``tool`` message with the call's id; its ``name`` is the called
  tool's, taken from the matching call when the format does not repeat it. A failed tool
  (Anthropic ``is_error``, LangChain ``status="error"``, an OpenInference TOOL span with
  status ERROR) sets ``is_error``.
- Reasoning (Responses ``reasoning`` items, Anthropic ``thinking`` blocks, reasoning
  content parts) is left out unless ``keep_reasoning=True``, which keeps it as assistant
  text starting ``[reasoning]``. Images, audio and files become ``[image]``-style
  placeholders so the judge sees that something was there.
- Empty text is no text (``None``).

An OTLP export also says where it came from: :func:`trace_ids` reads its trace id, the
judged (root) span's id and ``gen_ai.response.id``, which a row keeps (``Sample.trace_id``
and friends) so ``assay export`` can write the scores back into that trace.

Detection looks for each format's distinctive marks (``tool_use`` blocks, Responses item
types, LangChain ``data`` wrappers, ``resourceSpans``...) and converts with the best
match; plain role/content messages read as ``openai_chat``. When no format fits, the
:class:`~assay.errors.TraceFormatError` names the accepted formats, the closest one and
the field that failed in it, e.g. ``trace[2].content[0]: Anthropic block of type
'tool_use' needs 'name'``.
"""

from assay._traces._common import TRACE_FORMATS
from assay._traces._detect import detect_trace_format, load_trace
from assay._traces._ids import TraceIds, otel_id, trace_ids

__all__ = ["TRACE_FORMATS", "TraceIds", "detect_trace_format", "load_trace", "otel_id", "trace_ids"]
