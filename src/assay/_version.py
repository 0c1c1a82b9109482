"""The package version: one place, read by the build (pyproject) and by every record assay writes."""

__version__ = "0.1.0"
