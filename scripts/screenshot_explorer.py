#!/usr/bin/env python
"""Screenshot the window explorer as a user sees it: JupyterLab + headless Chromium, no network.

    .venv/bin/python scripts/screenshot_explorer.py [--question-index 5] [--out figures/window_explorer.png]

1. copies notebooks/03_window_explorer.ipynb into a temp dir (the checkout's notebook is never
   touched: JupyterLab would save it) and starts JupyterLab there on 127.0.0.1, a free port,
   without token, offline (HF_HUB_OFFLINE=1);
2. starts Debian's Chromium headless with a DevTools port and drives it over the Chrome
   DevTools Protocol with `websocket-client` (no selenium/playwright needed);
3. opens the notebook, runs all cells (JupyterLab's ``notebook:run-all-cells``), picks another
   question in the explorer's question dropdown, waits for the view to render, scrolls it into
   view and saves a PNG.

Needs: chromium on PATH (`apt-get install -y chromium`), the notebooks extra (jupyterlab,
ipywidgets) and websocket-client. Everything started is stopped at the end.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "03_window_explorer.ipynb"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-allow-origins=*",
    "--hide-scrollbars",
]
# JupyterLab settings that keep pop-ups (news, update checks) out of the picture.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False}
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout: float, what: str, every: float = 0.5):
    end = time.time() + timeout
    while time.time() < end:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


class CDP:
    """A minimal Chrome DevTools Protocol client: send a command, wait for its reply."""

    def __init__(self, ws_url: str):
        import websocket  # websocket-client

        self.ws = websocket.create_connection(ws_url, timeout=120, suppress_origin=True)
        self.ids = itertools.count(1)

    def __call__(self, method: str, **params):
        msg_id = next(self.ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def js(self, expression: str, timeout_ms: int = 120_000):
        """Evaluate JavaScript (awaiting promises) and return its JSON value."""
        r = self("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True, timeout=timeout_ms)
        if "exceptionDetails" in r:
            raise RuntimeError(f"JavaScript failed: {r['exceptionDetails'].get('exception', {}).get('description')}")
        return r.get("result", {}).get("value")

    def close(self):
        self.ws.close()


def stop(proc: subprocess.Popen | None):
    """Stop a process group we started (SIGTERM, then SIGKILL)."""
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


# The notebook panel: shell.currentWidget follows focus, which a headless window may never get.
PANEL = f"""(window.jupyterapp && [...window.jupyterapp.shell.widgets('main')].find(
  w => w.sessionContext && w.context && w.context.path.endsWith('{NOTEBOOK}')))"""

PANEL_READY = f"!!{PANEL}"

RUN_ALL = f"""(async () => {{
  const app = window.jupyterapp;
  const panel = {PANEL};
  await panel.context.ready;
  await panel.sessionContext.ready;
  app.shell.activateById(panel.id);
  app.shell.collapseLeft();  // the file browser only takes room in the picture
  await app.commands.execute('notebook:run-all-cells');
  return true;
}})()"""

KERNEL_IDLE = f"""(() => {{
  const panel = {PANEL};
  const kernel = panel && panel.sessionContext && panel.sessionContext.session && panel.sessionContext.session.kernel;
  const cells = panel ? panel.content.widgets.filter(c => c.model.type === 'code') : [];
  const done = cells.length > 0 && cells.every(c => c.model.executionCount !== null);
  return kernel ? kernel.status + (done ? ':done' : ':running') : 'none';
}})()"""


def pick_question(index: int) -> str:
    return f"""(() => {{
  const boxes = [...document.querySelectorAll('.widget-dropdown select')];
  const select = boxes.find(s => [...s.options].some(o => o.textContent.includes('[')));  // the question box
  if (!select) return null;
  select.selectedIndex = Math.min({index}, select.options.length - 1);
  select.dispatchEvent(new Event('change', {{bubbles: true}}));
  return select.value || select.options[select.selectedIndex].textContent;
}})()"""


VIEW_READY = """(() => {
  const out = document.querySelector('.widget-output .lzm');
  const plot = document.querySelector('.widget-output .js-plotly-plot, .widget-output .plotly');
  return out && plot ? out.querySelector('h3').textContent : null;
})()"""

SCROLL_TO_CONTROLS = """(() => {
  const box = document.querySelector('.widget-vbox');
  box.scrollIntoView({block: 'start'});
  return true;
})()"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "figures" / "window_explorer.png"))
    ap.add_argument("--question-index", type=int, default=5, help="option picked in the question dropdown")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1800)
    ap.add_argument("--timeout", type=float, default=300, help="seconds allowed for running all cells")
    args = ap.parse_args(argv)
    chromium = next(
        (shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None
    )
    if chromium is None:
        print("no Chromium on PATH: apt-get install -y chromium", file=sys.stderr)
        return 2

    work = Path(tempfile.mkdtemp(prefix="lazymem-shot-"))
    lab = browser = None
    cdp = None
    try:
        served = work / "served"  # JupyterLab's root: only the notebook, no logs or profiles
        served.mkdir()
        shutil.copy(ROOT / "notebooks" / NOTEBOOK, served / NOTEBOOK)
        settings = work / ".lab-settings"
        for rel, value in LAB_SETTINGS.items():
            (settings / rel).parent.mkdir(parents=True, exist_ok=True)
            (settings / rel).write_text(json.dumps(value))
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "JUPYTERLAB_SETTINGS_DIR": str(settings),
            "JUPYTERLAB_WORKSPACES_DIR": str(work / ".lab-workspaces"),
            "JUPYTER_RUNTIME_DIR": str(work / ".runtime"),
        }
        port = free_port()
        t0 = time.time()
        lab = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--ip=127.0.0.1",
                f"--port={port}",
                "--IdentityProvider.token=",
                "--ServerApp.password=",
                "--ServerApp.disable_check_xsrf=True",
                f"--ServerApp.root_dir={served}",
                "--LabApp.expose_app_in_browser=True",
                "--LabApp.news_url=None",
                *(["--allow-root"] if os.geteuid() == 0 else []),
            ],
            cwd=served,
            env=env,
            stdout=open(work / "lab.log", "w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for(lambda: lab.poll() is not None or http_ok(f"http://127.0.0.1:{port}/api/status"), 90, "JupyterLab")
        if lab.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with code {lab.returncode}")
        print(f"JupyterLab up on port {port} in {time.time() - t0:.1f} s")

        profile = work / ".chromium"
        browser = subprocess.Popen(
            [
                chromium,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-port=0",
                f"--window-size={args.width},{args.height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(work / "chromium.log", "w"),
            start_new_session=True,
        )
        devtools = wait_for(
            lambda: (
                (profile / "DevToolsActivePort").exists()
                and (profile / "DevToolsActivePort").read_text().split("\n")[0]
            ),
            60,
            "Chromium",
        )
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{devtools}/json/list", timeout=10))
        cdp = CDP(next(p for p in pages if p["type"] == "page")["webSocketDebuggerUrl"])
        cdp(
            "Emulation.setDeviceMetricsOverride",
            width=args.width,
            height=args.height,
            deviceScaleFactor=1,
            mobile=False,
        )
        cdp("Emulation.setFocusEmulationEnabled", enabled=True)  # headless windows never get focus
        cdp("Page.enable")
        cdp("Page.navigate", url=f"http://127.0.0.1:{port}/lab/tree/{NOTEBOOK}")
        wait_for(lambda: cdp.js(PANEL_READY), 120, "the notebook to open")
        print(f"notebook open at {time.time() - t0:.1f} s; running all cells")
        cdp.js(RUN_ALL, timeout_ms=int(args.timeout * 1000))
        wait_for(lambda: cdp.js(KERNEL_IDLE) == "idle:done", args.timeout, "all cells to finish", every=1)
        errors = cdp.js(
            "document.querySelectorAll('"
            '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"] .ansi-red-fg, '
            '.jp-RenderedText[data-mime-type="application/vnd.jupyter.error"]\').length'
        )
        print(f"all cells ran at {time.time() - t0:.1f} s ({errors} error outputs)")
        chosen = wait_for(lambda: cdp.js(pick_question(args.question_index)), 30, "the question dropdown")
        print(f"picked question {chosen!r}")
        shown = wait_for(lambda: cdp.js(VIEW_READY), 120, "the explorer to render the new question", every=1)
        if not chosen.startswith(shown):  # the option text starts with the question id
            raise RuntimeError(f"the view shows {shown!r}, not the picked question {chosen!r}")
        cdp.js(SCROLL_TO_CONTROLS)
        time.sleep(2)  # let plotly finish its first draw after scrolling
        png = base64.b64decode(cdp("Page.captureScreenshot", format="png")["data"])
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(png)
        print(f"wrote {out} ({len(png) // 1024} KiB) in {time.time() - t0:.1f} s, showing {shown!r}")
        return 0
    except Exception:
        log = work / "lab.log"
        if log.exists():
            print("--- JupyterLab log (tail) ---\n" + "\n".join(log.read_text().splitlines()[-30:]), file=sys.stderr)
        raise
    finally:
        if cdp is not None:
            cdp.close()
        stop(browser)
        stop(lab)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
