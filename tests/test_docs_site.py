"""The documentation site builds with ``mkdocs build --strict`` (issue 59), offline, with its generated parts whole.

``make test`` runs this, so a broken link, a page missing from the nav, a docstring the
API reference cannot render or a generated reference that came out empty fails CI
(``make docs`` builds the same site into ``site/``). The site must not fetch anything when
viewed: no script, stylesheet, image or font from another host.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import docs_hooks  # noqa: E402  (scripts/ is not a package)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT / "src")}
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, f"mkdocs build --strict failed (pip install -e '.[docs]'?):\n{build.stderr[-4000:]}"
    return out


def test_every_page_of_the_nav_is_built(site: Path) -> None:
    for page in ("index", "getting-started/install", "guides/troubleshooting", "reference/api", "changelog"):
        assert (site / f"{page}.html").is_file(), page


def test_the_cli_reference_shows_every_command_and_option(site: Path) -> None:
    from assay.cli import app

    text = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    commands = docs_hooks.cli_commands()
    assert {"run", "gate", "runs show", "model prepare", "cache clear", "judges fake"} <= set(commands)
    for command in commands:
        assert f"assay {command}" in text, command
    assert "--max-unscored" in text and "--allow-partial" in text  # options, not only names
    assert app.registered_commands  # the app the page was made from is the CLI's


def test_the_metrics_reference_lists_the_registry(site: Path) -> None:
    from assay.cli._metrics import metric_rows

    text = (site / "reference" / "metrics.html").read_text(encoding="utf-8")
    assert "assay-metrics-reference" not in text  # the marker was replaced
    rows = metric_rows()
    assert len(rows) >= 10
    for name, _, options in rows:
        assert f"<code>{name}</code>" in text, name
        first = options.split(", ")[0]
        if first != "—":
            assert first.split("=")[0].rstrip("*") in text, f"{name}: option {first}"


def test_the_api_reference_is_rendered_from_docstrings(site: Path) -> None:
    text = (site / "reference" / "api.html").read_text(encoding="utf-8")
    for name in ("assay.evaluate", "assay.EvalResult", "assay.Score", "Faithfulness", "evaluate_retrieval"):
        assert name in text, name
    assert "Score every sample with every metric" in text  # evaluate's own docstring


def test_nothing_is_fetched_when_viewed(site: Path) -> None:
    fetching = re.compile(r"""<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)=["']?(?:https?:)?//""", re.I)
    for page in site.rglob("*.html"):
        found = fetching.search(page.read_text(encoding="utf-8"))
        assert found is None, f"{page.relative_to(site)}: {found.group(0) if found else ''}"
    css = "".join(p.read_text(encoding="utf-8") for p in site.rglob("*.css"))
    assert "fonts.googleapis" not in css and "fonts.gstatic" not in css


def test_a_missing_marker_fails_the_build() -> None:
    from mkdocs.exceptions import PluginError

    class _File:
        src_uri = docs_hooks.METRICS_PAGE

    class _Page:
        file = _File()

    with pytest.raises(PluginError, match="marker"):
        docs_hooks.on_page_markdown("# Metrics\n\nno marker here\n", page=_Page())
    assert "| <code>faithfulness</code> |" in docs_hooks.on_page_markdown(docs_hooks.METRICS_MARKER, page=_Page())


def test_a_table_cell_cannot_be_split_or_inject_html(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.cli import _metrics

    monkeypatch.setattr(_metrics, "metric_rows", lambda: [("odd|name", "asks <b>this</b> | that", "k=a|b, m*")])
    row = docs_hooks.metrics_table().splitlines()[-1]
    assert row.count("|") == 4  # the row's own separators only
    assert "<b>" not in row and "&lt;b&gt;" in row
    assert "<code>k=a&#124;b</code>, <code>m*</code>" in row


def test_the_readmes_links_resolve() -> None:
    # README.md is not a page of the site, so --strict does not check it; GitHub renders these links.
    for readme in (ROOT / "README.md", ROOT / "CHANGELOG.md"):
        targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme.read_text(encoding="utf-8"))
        local = [t for t in targets if "://" not in t]
        assert local or readme.name == "CHANGELOG.md"
        for target in local:
            assert (readme.parent / target).exists(), f"{readme.name}: link to {target}, which does not exist"


def test_sphinx_roles_in_docstrings_show_as_code(site: Path) -> None:
    text = (site / "reference" / "api.html").read_text(encoding="utf-8")
    assert ":class:<code>" not in text and ":func:<code>" not in text
    shown = docs_hooks.sphinx_roles_as_code(
        ":class:<code>~assay.run.SizeLimits</code>, :func:<code>assay.evaluate</code>"
    )
    assert shown == "<code>SizeLimits</code>, <code>assay.evaluate</code>"


def test_the_trust_table_is_the_shipped_json_as_one_html_table(site: Path) -> None:
    """Issue 63, item 5: a paragraph inside the hand-written table broke it, its agent rows shown as raw pipes."""
    import html as html_lib
    import json

    from assay.run._trust import TRUST_TABLE

    table = json.loads(TRUST_TABLE.read_text(encoding="utf-8"))
    page = (site / "trust.html").read_text(encoding="utf-8")
    assert "assay-trust-table" not in page  # the marker was replaced
    tables = re.findall(r"<table>.*?</table>", page, re.S)
    assert len(tables) == 1, "the shipped table is one HTML table"
    rows = re.findall(r"<tr>(.*?)</tr>", tables[0], re.S)[1:]  # the header row first
    figures = [(name, f) for name, e in table["metrics"].items() for f in (e.get("figures") or {}).values()]
    free = [name for name, e in table["metrics"].items() if e.get("model_free")]
    assert len(rows) == len(figures) + len(free)
    cells = [
        [html_lib.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td>(.*?)</td>", r, re.S)]
        for r in rows
    ]
    for name, figure in figures:
        low, high = figure["ci"]
        shown = f"{figure['balanced_accuracy']:.3f} [{low:.3f}-{high:.3f}]"
        assert any(
            c[0] == name and c[3].startswith(shown) and c[4] == f"{figure['dataset']}, {figure['n']}" for c in cells
        ), (name, shown)
    for name in free:
        assert any(c[0] == name and c[3].startswith("model-free: no model") for c in cells), name
    # Nothing of a table is left as text: no paragraph of pipes.
    for paragraph in re.findall(r"<p>(.*?)</p>", page, re.S):
        assert "| <code>" not in paragraph and "|---|" not in paragraph, paragraph[:200]


def test_the_trust_rows_are_every_figure_of_the_json_and_say_which_is_shown() -> None:
    shown = {"dataset": "A", "n": 5, "balanced_accuracy": 0.7, "ci": [0.6, 0.8], "date": "d", "measured_with": "w"}
    other = {**shown, "dataset": "B", "n": 9, "balanced_accuracy": 0.55, "ci": [0.4, 0.7], "against": "the environment"}
    table = {
        "metrics": {
            "m": {"level": "verdict", "figure": shown, "figures": {"a": dict(shown), "b": other}},
            "free": {"model_free": "no model: exact"},
        }
    }
    rows = docs_hooks.trust_rows(table)
    assert rows[0][:5] == ["m", "verdict", "people", "0.700 [0.600-0.800] (shown)", "A, 5"]
    assert rows[1][2:4] == ["the environment", "0.550 [0.400-0.700]: not for gating"]
    assert rows[2][0] == "free" and rows[2][3] == "model-free: no model: exact"
