"""The code several benchmark scripts share, below them: scripts import from here and from assay, never each other.

- ``devsets``: where the human-labelled dev sets are, seeded samples of them, an item's contexts;
- ``judging``: the per-item judging cache (its folder, a judge's slug, the product's key) and
  the balanced accuracy read from it;
- ``grouped_cv``: source documents, folds grouped by them, and the figures chosen on one set
  and reported on another;

Nothing here imports a script (``tests/test_benchmark_layering.py``).
"""
