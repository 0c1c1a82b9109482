"""assay inside other evaluation frameworks.

- :mod:`assay.integrations.inspect`: assay metrics as `Inspect <https://inspect.aisi.org.uk>`_
  scorers (extra ``inspect``).

Each integration imports its framework only when used, so ``import assay`` never needs it.
"""

__all__: list[str] = []
