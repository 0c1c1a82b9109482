"""``python -m assay``: the same as the ``assay`` command."""

from assay.cli import main

main()
