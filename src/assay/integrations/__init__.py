"""assay inside other evaluation frameworks.

- :mod:`assay.integrations.inspect`: assay metrics as `Inspect <https://inspect.aisi.org.uk>`_
  scorers (extra ``inspect``).
- :mod:`assay.integrations.traces`: a stored run's scores written into the user's traces
  (``assay export``: OTLP, Phoenix, Langfuse; extras ``otel``, ``phoenix``, ``langfuse``).

Each integration imports its framework only when used, so ``import assay`` never needs it.
"""

__all__: list[str] = []
