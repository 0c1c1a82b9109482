"""An example judge backend to copy: any program that reads a request on stdin and prints the answer.

Wraps a local CLI (llama.cpp's ``llama-cli``, ``ollama run``, a script around your own
model) as an assay judge. Register it from your own package (no edit of assay)::

    [project.entry-points."assay.judges"]
    command = "my_package.command_judge:build"

then ``assay run data.jsonl --judge 'command:python my_llm.py'``. The program gets one
JSON object on stdin, ``{"messages": [...], "schema": {...} | null, "temperature": 0.0,
"max_tokens": 512, "seed": 0}``, and prints the answer (JSON matching ``schema`` when
there is one); a non-zero exit status is a failed call. See CONTRIBUTING.md; the test in
tests/test_contributing_examples.py runs this file as it is, against a real subprocess.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from assay.errors import ConfigError, JudgeError
from assay.models import ChatMessage, GenerateConfig, JudgeModel, JudgeResponse


class CommandJudge(JudgeModel):
    """A judge that runs ``command`` once per call.

    Subclassing :class:`~assay.models.JudgeModel` (a protocol) inherits the defaults of its
    optional capabilities; the four members below are the ones every backend defines.

    Args:
        command: The program and its arguments, split like a shell would (no shell runs).
        timeout_s: Seconds one call may take before the program is killed.
        concurrency: Calls worth running at once.
    """

    def __init__(self, command: str, *, timeout_s: float = 120.0, concurrency: int = 1) -> None:
        self.argv = shlex.split(command)
        if not self.argv:
            raise ConfigError("command judge needs a command, e.g. command:'python my_llm.py'")
        self.timeout_s = timeout_s
        self.concurrency = concurrency

    @property
    def model_id(self) -> str:
        """``command:<program name>``: what results and reports show."""
        return f"command:{Path(self.argv[0]).name}"

    @property
    def identity(self) -> str:
        """The whole command line: two commands must never share cached answers."""
        return "command:" + shlex.join(self.argv)

    @property
    def max_concurrency(self) -> int:
        """As configured (default 1)."""
        return self.concurrency

    @property
    def prefers_per_statement(self) -> bool:
        """One small question per call suits small local models best."""
        return True

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: type[BaseModel] | None = None,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        """Run the command with the request on stdin; its stdout is the answer.

        Raises:
            JudgeError: the command could not start, failed, or ran out of time. (An
                answer that does not parse is *not* an error here: assay's parser turns it
                into an unscored result with the reason.)
        """
        config = config or GenerateConfig()
        request = {
            "messages": list(messages),
            "schema": schema.model_json_schema() if schema is not None else None,
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
            "seed": config.seed,
        }
        started = time.monotonic()
        try:
            process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise JudgeError(f"{self.model_id}: cannot run {self.argv[0]!r}: {exc}") from exc
        try:
            out, err = await asyncio.wait_for(process.communicate(json.dumps(request).encode()), self.timeout_s)
        except TimeoutError:
            raise JudgeError(f"{self.model_id}: no answer within {self.timeout_s:g} s") from None
        finally:
            if process.returncode is None:  # timed out or cancelled: never leave the program running
                process.kill()
                await process.wait()
        if process.returncode != 0:
            tail = err.decode("utf-8", errors="replace").strip()[-300:]
            raise JudgeError(f"{self.model_id}: exited with status {process.returncode}: {tail}")
        return JudgeResponse(
            text=out.decode("utf-8", errors="replace"),
            model=self.model_id,
            latency_s=time.monotonic() - started,
            finish_reason="stop",
        )


def build(model: str, *, timeout_s: float = 120.0) -> CommandJudge:
    """The entry point's factory: ``--judge command:MODEL`` calls ``build("MODEL")``."""
    return CommandJudge(model, timeout_s=timeout_s)
