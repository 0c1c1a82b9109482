"""Ragas' faithfulness over a JSONL of samples, for ``benchmarks/throughput.py``.

Runs inside its own virtual environment (``/tmp/ragas-venv``, made by
``python benchmarks/throughput.py --setup-ragas``), never in assay's::

    /tmp/ragas-venv/bin/python benchmarks/ragas_faithfulness.py SAMPLES.jsonl \\
        --base-url http://127.0.0.1:PORT/v1 [--concurrency 32] [--api collections|evaluate]

Each line holds ``user_input``, ``response`` and ``retrieved_contexts``. Prints one JSON
line: wall time, samples scored, NaN results, and failures by exception type.

``--api collections`` (default) is Ragas' current API: ``ragas.metrics.collections.
Faithfulness`` with an ``llm_factory`` LLM over ``AsyncOpenAI``, one ``ascore`` per sample
with at most ``--concurrency`` in flight. ``--api evaluate`` is the older
``ragas.evaluate`` with ``RunConfig(max_workers=--concurrency)`` and the legacy metric over
a LangChain ``ChatOpenAI``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")


def read_rows(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


async def run_collections(
    rows: list[dict[str, Any]], base_url: str, concurrency: int
) -> tuple[list[float | str], float, float]:
    """One ``ascore`` per row, ``concurrency`` at a time: a value or the exception's type name; wall and CPU time.

    The clock starts after Ragas is imported and the metric built.
    """
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory
    from ragas.metrics.collections import Faithfulness

    client = AsyncOpenAI(base_url=base_url, api_key="not-needed")
    metric = Faithfulness(llm=llm_factory("fake", client=client))
    gate = asyncio.Semaphore(concurrency)
    start, cpu_start = time.perf_counter(), time.process_time()

    async def one(row: dict[str, Any]) -> float | str:
        async with gate:
            try:
                result = await metric.ascore(
                    user_input=row["user_input"], response=row["response"], retrieved_contexts=row["retrieved_contexts"]
                )
            except Exception as exc:  # a failed sample is a result here, as in ragas.evaluate
                return type(exc).__name__
            return float(result.value)

    try:
        values = list(await asyncio.gather(*(one(row) for row in rows)))
    finally:
        await client.close()
    return values, time.perf_counter() - start, time.process_time() - cpu_start


def run_evaluate(rows: list[dict[str, Any]], base_url: str, concurrency: int) -> tuple[list[float | str], float, float]:
    """``ragas.evaluate`` with the legacy metric (NaN where it could not score); wall and CPU time."""
    from langchain_openai import ChatOpenAI
    from ragas import EvaluationDataset, RunConfig, evaluate
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import Faithfulness

    llm = LangchainLLMWrapper(ChatOpenAI(model="fake", base_url=base_url, api_key="not-needed"))
    dataset = EvaluationDataset.from_list(rows)
    start, cpu_start = time.perf_counter(), time.process_time()
    result = evaluate(
        dataset,
        metrics=[Faithfulness()],
        llm=llm,
        run_config=RunConfig(max_workers=concurrency),
        show_progress=False,
    )
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return [float(v) for v in result.to_pandas()["faithfulness"]], wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("samples", type=Path)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--api", choices=("collections", "evaluate"), default="collections")
    args = parser.parse_args()

    rows = read_rows(args.samples)
    if args.api == "collections":
        values, wall, cpu = asyncio.run(run_collections(rows, args.base_url, args.concurrency))
    else:
        values, wall, cpu = run_evaluate(rows, args.base_url, args.concurrency)
    numbers = [v for v in values if isinstance(v, float)]
    scored = [v for v in numbers if not math.isnan(v)]
    report = {
        "api": args.api,
        "wall_s": wall,
        "cpu_s": cpu,
        "n": len(values),
        "n_scored": len(scored),
        "n_nan": len(values) - len(scored),  # failed samples count as NaN, as in ragas.evaluate
        "failed": dict(Counter(v for v in values if isinstance(v, str))),
        "mean": sum(scored) / len(scored) if scored else math.nan,
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
