"""The code several benchmark scripts share, below them: scripts import from here and from assay, never each other.

- ``devsets``: where the human-labelled dev sets are, seeded samples of them, an item's contexts;
- ``judging``: the per-item judging cache (its folder, a judge's slug, the product's key) and
  the balanced accuracy read from it;
- ``grouped_cv``: source documents, folds grouped by them, and the figures chosen on one set
  and reported on another;
- ``hidden``: the local judge with its hidden states captured at the verdict position;
- ``verifier_pairs``, ``evidence_pairs``: the synthetic training pairs and the evidence-removed pairs;
- ``rag_samples``, ``synthetic``, ``goals``: the inputs the speed and fault benchmarks run on;
- ``timing``: the machine line every speed figure carries, the PASS/MISS exit code.

Nothing here imports a script (``tests/test_benchmark_layering.py``).
"""
