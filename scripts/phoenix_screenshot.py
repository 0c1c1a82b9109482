"""Phoenix showing assay's annotation on a span: the guide's screenshot, taken again from scratch.

    make phoenix      # the real server, in .venv-phoenix
    .venv/bin/python scripts/phoenix_screenshot.py [--out docs/images/phoenix-annotation.png]

What it does, all on loopback: starts ``phoenix serve`` from ``.venv-phoenix`` on free ports
(its SQLite database in a temporary directory; telemetry, web fonts and the agent assistant
off), traces a small RAG app to it over OTLP, saves Phoenix's own span export
(``GET /v1/projects/rag-app/spans``) as ``spans.json``, then runs the guide's commands on it:

    assay run spans.json --judge openai:fake-word-overlap --base-url FAKE -m faithfulness
    assay export --latest --to phoenix -m faithfulness=0.8

with the fake judge (``assay.testing.FakeOpenAIServer``: word rules, no model: the page
shows where a score lands, not a measured one). Headless Chromium then photographs the
trace page of the row that failed, its root span selected and its annotation's
details open (score, label, annotator kind, explanation), at a fixed size (no cropping
needed, about 100 KB). Nothing on the page is secret: the server is a
throwaway on 127.0.0.1 with no auth, and the data is the made-up app's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the server and the app the real-Phoenix test starts, and cdp
FAKE_MODEL = "fake-word-overlap"


def wait_for(what: str, check: Any, timeout_s: float, log: Path) -> None:
    """Poll ``check`` until true; past ``timeout_s``, exit saying what was awaited, with the server log's tail."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if check():
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
            sys.exit(f"gave up after {timeout_s:.0f} s waiting for {what}; the server's log ends:\n{tail}")
        time.sleep(0.5)


def assay(*args: str, env: dict[str, str], cwd: Path) -> str:
    """Run ``python -m assay ARGS`` as a user would, echoing the command and its output."""
    done = subprocess.run([sys.executable, "-m", "assay", *args], env=env, cwd=cwd, capture_output=True, text=True)
    print(f"$ assay {' '.join(args)}\n{done.stdout}{done.stderr}", end="")
    if done.returncode not in (0, 2):  # 2: some rows did not pass the gate, which is the point here
        sys.exit(f"assay {args[0]} exited {done.returncode}")
    return done.stdout


def photograph(page: str, out: Path, width: int, height: int) -> None:
    """Open ``page`` in headless Chromium, click the root span's annotation badge, save the viewport to ``out``.

    Driven over the DevTools protocol (tests/cdp.py) rather than ``chromium --screenshot``:
    the annotation's label, annotator kind and explanation are in the popover that a click on
    the badge opens, which a plain screenshot never shows.
    """
    from cdp import Chromium

    with Chromium(width=width, height=height, timeout=60) as browser:
        browser.navigate(page)
        badge = """(() => {
            const header = document.querySelector('.card__collapsible-header');
            const badges = header ? [...header.querySelectorAll('*')].filter(
                e => e.textContent.startsWith('faithfulness') && e.textContent.includes('\u03bc')) : [];
            if (!badges.length) return null;
            const r = badges[badges.length - 1].getBoundingClientRect();
            return {x: r.left + r.width / 2, y: r.top + r.height / 2};
        })()"""
        where = browser.wait_for(badge, timeout=60)
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):  # a press opens "View annotation details"
            event = {"type": kind, "x": where["x"], "y": where["y"], "button": "left", "clickCount": 1}
            browser.send("Input.dispatchMouseEvent", event)
        shown = """(() => {  // the explanation is on screen, faded in: every ancestor fully opaque
            const all = [...document.querySelectorAll('body *')];
            let e = all.find(n => n.childElementCount === 0
                             && n.textContent.includes('solid gold.: not in the context'));
            if (!e) return false;
            for (; e; e = e.parentElement) if (getComputedStyle(e).opacity !== '1') return false;
            return true;
        })()"""
        browser.wait_for(shown, timeout=20)
        time.sleep(0.5)
        out.parent.mkdir(parents=True, exist_ok=True)
        browser.screenshot(out)


def main() -> None:
    """Serve, trace, read, run, export, photograph."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "phoenix-annotation.png")
    parser.add_argument("--width", type=int, default=1280, help="the browser window's width in pixels")
    parser.add_argument("--height", type=int, default=760, help="the window's height (the picture: ~140 px less)")
    parser.add_argument("--keep", action="store_true", help="leave the server running until Enter (to look around)")
    args = parser.parse_args()
    from assay.testing import FakeOpenAIServer
    from phoenix_app import APP, PHOENIX, PROJECT, get_json, send_app_traces, serve

    if not PHOENIX.exists():
        sys.exit(f"no Phoenix server at {PHOENIX}: run make phoenix")
    if not Path("/usr/bin/chromium").exists():
        sys.exit("no /usr/bin/chromium: make browser (or sudo apt-get install chromium)")

    work = Path(tempfile.mkdtemp(prefix="assay-phoenix-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_", "LANGFUSE_"))}
    server = serve(work)
    try:
        print(f"phoenix serve in {work} (log: {server.log})")
        problem = server.wait_ready()
        if problem is not None:
            sys.exit(problem)
        url = server.url  # known once it answers: a port taken in between means a start on another
        print(f"phoenix serve on {url}")
        trace_ids = send_app_traces(url).trace_ids
        spans = work / "spans.json"

        def stored() -> bool:
            export = get_json(f"{url}/v1/projects/{PROJECT}/spans?limit=1000")
            spans.write_text(json.dumps(export))
            return len(export["data"]) == 3 * len(APP)

        wait_for(f"Phoenix to store the app's {3 * len(APP)} spans", stored, 30, server.log)

        run_env = dict(env, PHOENIX_ENDPOINT=url, OTEL_EXPORTER_OTLP_ENDPOINT=url,
                       OTEL_RESOURCE_ATTRIBUTES=f"openinference.project.name={PROJECT}")  # fmt: skip
        run_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
        with FakeOpenAIServer(model=FAKE_MODEL) as judge:
            assay("run", "spans.json", "--judge", f"openai:{FAKE_MODEL}", "--base-url", judge.base_url,
                  "-m", "faithfulness", env=run_env, cwd=work)  # fmt: skip
        assay("export", "--latest", "--to", "phoenix", "-m", "faithfulness=0.8", env=run_env, cwd=work)

        project = next(p for p in get_json(f"{url}/v1/projects")["data"] if p["name"] == PROJECT)
        failing = trace_ids["gilded"]
        root = next(s["id"] for s in json.loads(spans.read_text())["data"]
                    if s["context"]["trace_id"] == failing and s["parent_id"] is None)  # fmt: skip
        page = f"{url}/projects/{project['id']}/traces/{failing}?selectedSpanNodeId={root}"
        photograph(page, args.out, args.width, args.height)
        print(f"{page}\n-> {args.out} ({args.out.stat().st_size // 1024} KB)")
        if args.keep:
            input("Phoenix is still up; press Enter to stop it.")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
