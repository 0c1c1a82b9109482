"""The install-time check of an AMX build: does it compute what the default build computes?

``scripts/build-llama-amx.sh`` runs ``python -m assay.models._amx_check check DIR`` on a
candidate build; it loads the default judge twice, in two child processes, once per build,
and compares their next-token probabilities on a real prompt. It sits above the local
judge (it loads one), so :mod:`assay.models._amx`, which the local judge imports to choose
its build, stays below it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

__all__ = ["check_build"]

_CHECK_PROMPT = (
    "The Amazon River is about 6,400 km long and empties into the Atlantic Ocean. Its basin covers parts of "
    "nine countries. The river was named by the Spanish explorer Francisco de Orellana in 1542. "
) * 6 + "Question: which ocean does the Amazon empty into? Answer: the"


def _logits_here() -> None:
    """Child: print the default model's last-position logits' top tokens and probabilities as JSON."""
    import numpy as np

    from assay.models._local import LocalJudge

    judge = LocalJudge()
    llama = judge.load()
    tokens = llama.tokenize(_CHECK_PROMPT.encode(), add_bos=False)
    llama.eval(tokens)  # one batch of ~200 tokens: the batched (AMX) kernels, not the single-token path
    import llama_cpp

    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llama._ctx.ctx, -1), shape=(llama.n_vocab(),))
    p = np.exp(logits - logits.max())
    p /= p.sum()
    top = np.argsort(-p)[:5]
    info = llama_cpp.llama_print_system_info().decode(errors="replace")
    print(json.dumps({"top": top.tolist(), "p": p[top].tolist(), "system": info, "tokens": len(tokens)}))


def check_build(directory: Path) -> tuple[bool, str]:
    """Whether the build in ``directory`` runs and agrees with the default build on a real prompt."""
    results = {}
    for name, lib in (("default", None), ("candidate", str(directory))):
        env = {k: v for k, v in os.environ.items() if k != "LLAMA_CPP_LIB_PATH"}
        env["ASSAY_AMX"] = "off"
        if lib is not None:
            env["LLAMA_CPP_LIB_PATH"] = lib
        done = subprocess.run(
            [sys.executable, "-m", "assay.models._amx_check", "logits"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=600,
        )
        if done.returncode != 0:
            how = f"killed by {signal.Signals(-done.returncode).name}" if done.returncode < 0 else "failed"
            return False, f"the {name} build {how}: {done.stderr.strip()[-400:]}"
        results[name] = json.loads(done.stdout.strip().splitlines()[-1])
    a, b = results["default"], results["candidate"]
    if "AMX_INT8 = 1" not in b["system"]:
        return False, f"the candidate build has no AMX kernels ({b['system'].strip()})"
    if a["top"][0] != b["top"][0]:
        return False, f"the builds disagree on the next token: {a['top'][0]} vs {b['top'][0]}"
    drift = abs(a["p"][0] - b["p"][0])
    if drift > 0.02:
        return False, f"the builds' top probability differs by {drift:.3f}"
    return True, f"agrees with the default build (top token {a['top'][0]}, P {a['p'][0]:.4f} vs {b['p'][0]:.4f})"


def _main(argv: list[str]) -> int:
    if argv[:1] == ["logits"]:
        _logits_here()
        return 0
    if argv[:1] == ["check"] and len(argv) == 2:
        ok, said = check_build(Path(argv[1]))
        print(said)
        return 0 if ok else 1
    print("usage: python -m assay.models._amx_check check DIR | logits", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
