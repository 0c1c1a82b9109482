"""The data has one road: every door enters the reading package by its front, and the walk stays short.

``benchmarks/data_road.py`` follows the data of ``assay run`` from the command to the row
handed to a metric; these tests hold what it measured after the reading moved into
``assay.run._data`` (before: ``_dataset.py`` entered 6 times and ``_readers.py`` 5 times,
12 returns to a module already left).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOORS = ("cli/_run.py", "run/_evaluate.py", "run/_ray.py", "pytest_plugin.py", "run/_calibrate.py", "run/_session.py")


def _imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}


@pytest.mark.parametrize("door", DOORS)
def test_every_door_enters_the_reading_package_by_its_front(door: str) -> None:
    imported = _imported(ROOT / "src" / "assay" / door)
    inside = sorted(name for name in imported if name.startswith("assay.run._data."))
    assert not inside, f"{door} reaches past the package's front door: {inside}"
    assert "assay.run._data" in imported, f"{door} reads data without the reading package"


def test_no_door_builds_rows_but_through_read_rows() -> None:
    for door in DOORS:
        text = (ROOT / "src" / "assay" / door).read_text(encoding="utf-8")
        for private in ("rows_from_items", "from_dataframe(", "read_dataset(", "read_csv("):
            assert private not in text, f"{door} calls {private} instead of read_rows"


def test_assay_run_walks_the_data_through_the_package_without_going_back_and_forth(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    spec = importlib.util.spec_from_file_location("data_road", ROOT / "benchmarks" / "data_road.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    walk = module.walk_run(tmp_path)
    modules = walk.modules
    assert not [m for m in modules if m in ("assay.run._dataset", "assay.run._readers")]
    reading = [m for m in modules if m.startswith("assay.run._data")]
    sources = [m for m in reading if m.startswith("assay.run._data._sources.") and not m.endswith(".files")]
    assert sources == ["assay.run._data._sources.jsonl"], sources  # one source for one file
    functions = [name for _, name in walk.stops]
    assert functions.index("read_rows") < functions.index("_checked_jsonl_rows") < functions.index("row_from_record")
    per_module = walk.per_module()
    assert max(per_module[m] for m in reading) <= 3, per_module
    assert walk.returns <= 9, walk.summary()
