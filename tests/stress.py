"""How many seeded random trials a stress test runs: a few in the suite, all of them under ``make stress``.

The kill -9 and Ctrl-C grids send a signal at random points of a run in a child
process; each trial costs a Python start-up or two (seconds on a 2-core Zen 1). The suite
runs each path a few times so a developer waits minutes, not half an hour; ``make stress``
(``ASSAY_STRESS=1``) runs the full counts that found the races they guard (issues 33 and
56), for a change to the run loop, the store or signal handling.
"""

from __future__ import annotations

import os


def trials(full: int, quick: int) -> int:
    """``full`` under ``make stress`` (``ASSAY_STRESS=1``), else ``quick``: the trials of one row of a stress grid."""
    return full if os.environ.get("ASSAY_STRESS", "") not in ("", "0") else min(quick, full)
