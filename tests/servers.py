"""Helpers for tests that need a real server process on the loopback interface."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalServer:
    """A `transformers serve` process on a free loopback port; restarted if a test killed it."""

    def __init__(self, model: str, root: Path):
        self.model, self.root, self.proc = model, root, None
        self.lines: list[str] = []

    def ensure(self) -> str:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        return self.url

    def start(self, keep_port: bool = False):
        """Start (or restart) the server; keep_port restarts it on the port it had, so a
        client configured with the old URL reaches the new process."""
        port = self.port if keep_port and getattr(self, "port", None) else free_port()
        self.port = port
        self.url = f"http://127.0.0.1:{port}/v1"
        # unbuffered: the fault test acts on the access-log line as soon as it is written
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(self.root), "OMP_NUM_THREADS": "1",
               "PYTHONUNBUFFERED": "1"}
        exe = Path(sys.executable).with_name("transformers")
        self.proc = subprocess.Popen([str(exe), "serve", self.model, "--host", "127.0.0.1", "--port", str(port),
                                      "--device", "cpu"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        self.lines = []
        threading.Thread(target=lambda: self.lines.extend(iter(self.proc.stdout.readline, "")), daemon=True).start()
        import urllib.request

        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("transformers serve exited:\n" + "".join(self.lines[-20:]))
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError("transformers serve did not become healthy in 120 s")

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
