"""Fit the hidden-state probe: a linear read of the judge's verdict-position hidden state (issue 24).

Input: ``hidden_states.py``'s cache (one verdict-position hidden state per item, every
other layer of the local judge and its final norm, with today's verifier's P, veto and
flags). Model: L2 logistic regression on the standardised hidden state of one layer
(numpy, Newton's method in the SVD basis of the training inputs, ``grouped_cv.Basis``),
every item weighted so that each set, and within it each label, counts once.

What is chosen, and how: the layer and the regularisation C by an inner cross-validation
grouped by source document (lowest weighted log-loss out of fold); the threshold by the
highest mean per-set balanced accuracy on those out-of-fold scores (``grouped_cv.Probe``).
With ``--with-p`` a two-input logistic model over (probe logit, logit P) is fitted on the
out-of-fold probe scores as well.

It prints, per layer, the grouped-CV balanced accuracy of a probe held to that layer (a
diagnostic: choosing the best row of that table by its own figures would be the
optimism issue 24 removes; ``judge_agreement.py --cv`` chooses the layer inside each
training part), then writes the probe fitted on all items:

    {"schema": 1, "feature_version": .., "model_sha256": .., "layer": "l_out-20",
     "c": .., "threshold": .., "mean": [...], "scale": [...], "coef": [...],
     "intercept": .., "stack": null | {"weights": [w_probe, w_p], "intercept": ..},
     "fitted_on": {...}, "created": ...}

``coef``/``intercept`` apply to the raw hidden state (the standardisation folded in;
``mean``/``scale`` are recorded for inspection). ``model_sha256`` and ``feature_version``
say what it was fitted on: a probe is meaningless on another model's hidden states. The
file goes to ``benchmarks/data/`` (a record); it ships in ``src/`` only if the kill
criterion of issue 24 is met (``docs/design/grounding/verifier.md``).

    python benchmarks/fit_probe.py                  # diagnostic per layer, fit, write benchmarks/data/probe.json
    python benchmarks/fit_probe.py --with-p --dry-run
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from pathlib import Path

import numpy as np
from _lib.grouped_cv import Data, Probe, evaluate, folds_of, load_hidden, table
from _lib.judging import CACHE

from assay.models._weights import DEFAULT_MODEL_FILE, DEFAULT_MODEL_SHA256

OUT = Path(__file__).resolve().parent / "data" / "probe.json"
SCHEMA = 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sets", default="summedits,begin,wice")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--layers", default="", help="candidate layers (default: l_out-4 on and result_norm)")
    parser.add_argument("--with-p", action="store_true", help="stack the probe with logit P")
    parser.add_argument("--no-diagnostic", action="store_true", help="skip the per-layer table")
    parser.add_argument("--dry-run", action="store_true", help="report only; write nothing")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    folder = CACHE / f"hidden-local_{Path(DEFAULT_MODEL_FILE).stem}-s{args.seed}"
    about = json.loads((folder / "about.json").read_text())
    if about["model_sha256"] != DEFAULT_MODEL_SHA256:
        raise SystemExit(f"{folder} was read from another model ({about['model_sha256'][:12]})")
    data: Data = load_hidden(folder, args.sets.split(","))
    layers = [x for x in args.layers.split(",") if x] or [n for n in data.layers if n not in ("l_out-0", "l_out-2")]
    folds = folds_of(data, args.folds, args.seed)
    print(
        f"{len(data)} items ("
        + ", ".join(f"{s} {int((data.sets == s).sum())}" for s in dict.fromkeys(data.sets.tolist()))
        + f"), {args.folds} folds grouped by source document"
    )
    shared: dict[object, object] = {}
    if not args.no_diagnostic:
        print("\nper layer (diagnostic: grouped-CV balanced accuracy of a probe held to one layer)")
        results = []
        for name in layers:
            started = time.perf_counter()
            results.append(evaluate(Probe(name, [name], with_p=args.with_p, shared=shared), data, folds, args.seed))
            print(f"  {name}: {time.perf_counter() - started:.0f} s", flush=True)
        table(results, data, args.seed)
    probe = Probe("probe", layers, with_p=args.with_p, shared=shared)
    fitted = probe.fit(data, args.seed)
    name = data.layers[fitted.layer]
    print(f"\nfitted on all {len(data)} items: layer {name}, C {fitted.c:g}, threshold {fitted.threshold:.2f}")
    if args.dry_run:
        return
    assert fitted.mean is not None and fitted.scale is not None
    record = {
        "schema": SCHEMA,
        "feature_version": about["feature_version"],
        "model_sha256": DEFAULT_MODEL_SHA256,
        "layer": name,
        "position": "the last prompt token before the verdict digit (after '{\"verdict\": ')",
        "c": fitted.c,
        "threshold": fitted.threshold,
        "mean": np.round(fitted.mean, 6).tolist(),
        "scale": np.round(fitted.scale, 6).tolist(),
        "coef": np.round(fitted.coef, 8).tolist(),
        "intercept": round(fitted.intercept, 8),
        "stack": None
        if fitted.stack is None
        else {"weights": fitted.stack[0].tolist(), "intercept": fitted.stack[1], "inputs": ["probe logit", "logit P"]},
        "fitted_on": {s: int((data.sets == s).sum()) for s in dict.fromkeys(data.sets.tolist())},
        "created": datetime.date.today().isoformat(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record) + "\n")
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    main()
