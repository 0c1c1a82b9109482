"""How far the local judge is from this machine's limit: its tokens/s beside the machine's measured throughput.

Measured on the machine it runs on, each figure beside the CPU model, its vector
extensions and the load average (run it alone: llama.cpp slows badly beside other work):

- **The machine.** Arithmetic ceilings from ``peak.c`` (built here with gcc; one child
  process a kernel, every core, register-resident multiply-adds: fp32 FMA on AVX2 and
  AVX-512, int8 dot products on AVX-VNNI, AVX-512 VNNI and AMX tiles, each only where the
  CPU lists it); numpy's fp32 matrix multiply (a real GEMM, 2048 cubed); memory read
  bandwidth (numpy sums over 1 GiB, one thread a core).
- **The judge.** The default model on the llama.cpp build the judge chooses
  (``assay.models._amx``): prompt reading in tokens/s at 128 to 2,048 tokens, one
  generated token (a forward pass of one token), and a batch of k tokens (what checking a
  draft costs).
- **The fractions.** Prompt reading as operations per second (2 x parameters a token)
  against the int8 ceiling of the kernels llama.cpp uses there (AMX where loaded, else
  AVX-512 VNNI, else AVX-VNNI or AVX2), and generation as bytes of weights read per second
  against the memory bandwidth.

    python benchmarks/judge_limit.py                 # the build the judge would choose
    python benchmarks/judge_limit.py --compare       # and, each in a child process, the shipped Q4_K_M
                                                     # weights on the same build, and the default build
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _lib.timing import cpu, machine_line

HERE = Path(__file__).resolve().parent
KERNELS = (
    ("fp32-avx2", ("avx2", "fma")),
    ("fp32-avx512", ("avx512f",)),
    ("int8-avx2", ("avx2",)),
    ("int8-avxvnni", ("avx_vnni",)),
    ("int8-avx512vnni", ("avx512_vnni",)),
    ("int8-amx", ("amx_int8",)),
    ("bf16-amx", ("amx_bf16",)),
)


def peaks(threads: int, seconds: float) -> dict[str, float | str]:
    _, flags = cpu()
    out: dict[str, float | str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "peak"
        built = subprocess.run(
            ["gcc", "-O3", "-funroll-loops", "-pthread", str(HERE / "peak.c"), "-o", str(binary)],
            capture_output=True,
            text=True,
            check=False,
        )
        if built.returncode != 0:
            return {"error": f"cannot build peak.c: {built.stderr.strip()[-200:]}"}
        for name, needs in KERNELS:
            if not all(f in flags for f in needs):
                continue
            done = subprocess.run(
                [str(binary), name, str(threads), str(seconds)], capture_output=True, text=True, check=False
            )
            if done.returncode == 0:
                out[name] = float(done.stdout.split()[-1])
            else:
                out[name] = (
                    f"not allowed ({'signal ' + str(-done.returncode) if done.returncode < 0 else done.stdout.strip()})"
                )
    return out


def numpy_figures(threads: int) -> dict[str, float]:
    import numpy as np

    a = np.random.default_rng(0).standard_normal((2048, 2048), dtype=np.float32)
    a @ a
    started = time.perf_counter()
    for _ in range(3):
        a @ a
    gemm = 3 * 2 * 2048**3 / (time.perf_counter() - started) / 1e9
    big = np.ones(256 * 1024 * 1024 // 4 * 4, dtype=np.float32)  # 1 GiB
    parts = np.array_split(big, threads)
    parts[0].sum()
    best = 0.0
    for _ in range(3):
        workers = [threading.Thread(target=p.sum) for p in parts]
        started = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        best = max(best, big.nbytes / (time.perf_counter() - started) / 1e9)
    return {"numpy_sgemm_gflops": gemm, "read_gb_s": best}


def judge_figures(lengths: list[int], batches: list[int]) -> dict[str, Any]:
    import numpy as np

    from assay.models._local import LocalJudge

    judge = LocalJudge()
    llama = judge.load()  # chooses the llama.cpp build: llama_cpp must not be imported before this
    assert judge.library is not None
    import llama_cpp

    text = (HERE.parents[1] / "shared" / "data" / "grounding" / "wice_dev.jsonl").read_text()[:60000]
    tokens = llama.tokenize(text.encode(), add_bos=False)
    out: dict[str, Any] = {
        "library": judge.library.library,
        "library_reason": judge.library.reason,
        "weights": judge.weights,
        "params": int(llama_cpp.llama_model_n_params(llama._model.model)),
        "model_bytes": Path(llama.model_path).stat().st_size,
        "system": llama_cpp.llama_print_system_info().decode(errors="replace").strip(),
    }
    llama.eval(tokens[:64])  # warm: weights paged in, buffers allocated
    prompt = {}
    for n in lengths:
        llama.reset()
        llama._ctx.kv_cache_clear()
        started = time.perf_counter()
        llama.eval(tokens[:n])
        prompt[n] = n / (time.perf_counter() - started)
    out["prompt_tokens_s"] = prompt
    base = llama.n_tokens
    costs = {}
    for k in batches:
        times = []
        for _ in range(6):
            llama._ctx.kv_cache_seq_rm(-1, base, -1)
            llama.n_tokens = base
            llama._batch.set_batch(batch=tokens[base : base + k], n_past=base, logits_all=True)
            started = time.perf_counter()
            llama._ctx.decode(llama._batch)
            times.append(time.perf_counter() - started)
        costs[k] = float(np.median(times))
    out["batch_s"] = costs
    out["generate_tokens_s"] = 1 / costs[1] if 1 in costs else None
    return out


def child_judge(env: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--judge-only", "--lengths", args.lengths, "--batches", args.batches],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip()[-400:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def int8_ceiling(judge: dict[str, Any], machine: dict[str, Any]) -> str | None:
    """The int8 kernel the judge's build multiplies with: AMX where that build is loaded, else the widest compiled in.

    Read from the build's own system info, not the CPU's flags: a build for AVX2 only
    (``judge_speed.py``'s ``avx2``) is held to AVX2's ceiling on a CPU that has more.
    """
    system = judge.get("system", "")
    built = (
        ("int8-amx", judge["library"] == "amx"),
        ("int8-avx512vnni", "AVX512_VNNI = 1" in system),
        ("int8-avxvnni", "AVX_VNNI = 1" in system),
        ("int8-avx2", "AVX2 = 1" in system),
    )
    return next((k for k, yes in built if yes and isinstance(machine.get(k), float)), None)


def report(judge: dict[str, Any], machine: dict[str, Any]) -> None:
    if "error" in judge:
        print(f"  judge failed: {judge['error']}")
        return
    ops_per_token = 2 * judge["params"]
    ceiling_name = int8_ceiling(judge, machine)
    ceiling = machine.get(ceiling_name) if ceiling_name else None
    print(f"  llama.cpp build: {judge['library']} ({judge['library_reason']}); weights: {judge.get('weights')}")
    print(f"  model: {judge['params'] / 1e9:.2f} B parameters, {judge['model_bytes'] / 1e6:.0f} MB")
    print("  | what | judge | as throughput | machine's measured limit | fraction |")
    print("  |---|---|---|---|---|")
    for n, tps in judge["prompt_tokens_s"].items():
        gops = tps * ops_per_token / 1e9
        frac = f"{gops / ceiling:.1%}" if ceiling else "-"
        limit = f"{ceiling:.0f} GOPS ({ceiling_name})" if ceiling else "-"
        print(f"  | prompt of {n} tokens | {tps:.1f} tokens/s | {gops:.0f} GOPS | {limit} | {frac} |")
    gen = judge["generate_tokens_s"]
    bw = machine.get("read_gb_s")
    gbs = gen * judge["model_bytes"] / 1e9
    print(
        f"  | one generated token | {gen:.1f} tokens/s | {gbs:.1f} GB/s of weights | {bw:.1f} GB/s (read) | "
        f"{gbs / bw:.0%}{' (numpy read less: its figure is a floor, not the limit)' if gbs > bw else ''} |"
    )
    one = judge["batch_s"].get(1) or judge["batch_s"].get("1")
    for k, seconds in judge["batch_s"].items():
        print(f"  | a batch of {k} tokens | {seconds * 1000:.0f} ms | {float(seconds) / one:.2f}x one token | | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--compare", action="store_true", help="also the shipped weights and the default build, in child processes"
    )
    parser.add_argument("--lengths", default="128,512,1024,2048")
    parser.add_argument("--batches", default="1,2,4,8,16")
    parser.add_argument("--seconds", type=float, default=1.0, help="per arithmetic kernel")
    parser.add_argument("--judge-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    batches = [int(x) for x in args.batches.split(",")]
    if args.judge_only:
        print(json.dumps(judge_figures(lengths, batches)))
        return
    threads = os.cpu_count() or 1
    print(f"machine: {machine_line()}")
    machine: dict[str, Any] = dict(peaks(threads, args.seconds))
    machine.update(numpy_figures(threads))
    print(f"measured on {threads} threads:")
    for key, value in machine.items():
        unit = (
            "GB/s"
            if key.endswith("gb_s")
            else "GFLOP/s"
            if "fp32" in key or "sgemm" in key or "bf16" in key
            else "GOPS"
        )
        print(f"  {key}: {value:.1f} {unit}" if isinstance(value, float) else f"  {key}: {value}")
    runs = {"chosen": child_judge(dict(os.environ), args)}
    if args.compare:
        runs["shipped weights"] = child_judge({**os.environ, "ASSAY_LOCAL_LAYOUT": "shipped"}, args)
        runs["default build"] = child_judge({**os.environ, "ASSAY_AMX": "off", "ASSAY_LOCAL_LAYOUT": "shipped"}, args)
    for name, judge in runs.items():
        print(f"\njudge ({name}), load average {os.getloadavg()[0]:.2f}:")
        report(judge, machine)
    a = runs["chosen"]
    for name, b in list(runs.items())[1:]:
        if "error" in a or "error" in b:
            continue
        ratios = ", ".join(
            f"{n}: {a['prompt_tokens_s'][n] / b['prompt_tokens_s'][n]:.2f}x" for n in b["prompt_tokens_s"]
        )
        one = a["batch_s"]["1"] if "1" in a["batch_s"] else a["batch_s"][1]
        other = b["batch_s"]["1"] if "1" in b["batch_s"] else b["batch_s"][1]
        print(f"\nchosen / {name}: prompt tokens/s by length {ratios}; one generated token {other / one:.2f}x")
    if args.json:
        args.json.write_text(json.dumps({"machine_line": machine_line(), "machine": machine, "judge": runs}, indent=1))


if __name__ == "__main__":
    main()
