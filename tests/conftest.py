"""Shared fixtures: a private built site, `build.py serve` on a free port, and Playwright Chromium.

The site is built once per pytest session into a temporary folder (hard links, ~1 s), so concurrent
sessions never see each other's rebuilds.  Browser tests record every request to a non-local host.
"""
from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODEL = Path(os.environ.get("DISPATCHLAB_MODEL", ROOT / ".cache/model/SmolLM2-135M-Instruct.Q4_1.gguf"))
LOCAL = re.compile(r"^(https?|wss?)://(127\.0\.0\.1|localhost|\[::1\])(:\d+)?/")
CHROMIUM_FLAGS = ["--enable-unsafe-webgpu", "--enable-webgpu-developer-features", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage"]


def chromium_path() -> str:
    for c in (os.environ.get("CHROMIUM"), "/usr/bin/chromium"):
        if c and Path(c).exists():
            return c
    pytest.skip("no Chromium (set $CHROMIUM); `python build.py test` installs one")


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """A private copy of the built site for this session."""
    import build
    out = tmp_path_factory.mktemp("site") / "dist"
    return build.build(out=out)


class Server:
    def __init__(self, site: Path):
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "build.py"), "serve", "--port", "0", "--dist", str(site)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if not m:
            self.proc.kill()
            raise RuntimeError(f"build.py serve did not start: {line}{self.proc.stdout.read()}")
        self.url = f"http://127.0.0.1:{m.group(1)}/"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture(scope="session")
def server(site):
    s = Server(site)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def playwright_instance():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        yield pw


def launch(pw, flags=CHROMIUM_FLAGS):
    return pw.chromium.launch(executable_path=chromium_path(), args=list(flags), headless=True)


@pytest.fixture(scope="session")
def browser(playwright_instance):
    b = launch(playwright_instance)
    yield b
    b.close()


@pytest.fixture
def page(browser):
    """A fresh page (own context, so no shared storage) that records and blocks non-local requests."""
    ctx = browser.new_context(accept_downloads=True)
    p = ctx.new_page()
    p.external_requests = []
    p.console_errors = []

    def route(r):
        if LOCAL.match(r.request.url) or r.request.url.startswith(("data:", "blob:")):
            return r.continue_()
        p.external_requests.append(r.request.url)
        return r.abort()
    p.route("**/*", route)
    p.on("console", lambda m: m.type == "error" and p.console_errors.append(m.text))
    yield p
    ctx.close()


def wait_state(page, states=("ready", "done", "error"), timeout_s: float = 120) -> str:
    sel = ", ".join(f"#status[data-state={s}]" for s in states)
    page.wait_for_selector(sel, timeout=timeout_s * 1000)
    return page.get_attribute("#status", "data-state")


def open_lab(page, server, query: str = "", timeout_s: float = 120) -> str:
    page.goto(server.url + (("?" + query) if query else ""))
    return wait_state(page, timeout_s=timeout_s)


def page_text_has_no_traceback(page) -> bool:
    text = page.inner_text("body")
    return "Traceback (most recent call last)" not in text and 'File "/' not in text


@pytest.fixture(scope="module")
def lab_page(browser, server):
    """One booted page per test module, with the page's test hooks (window.dlLLM, window.dlAmortize)."""
    ctx = browser.new_context()
    page = ctx.new_page()
    assert open_lab(page, server) == "ready"
    page.wait_for_function("window.dlLLM !== undefined && window.dlAmortize !== undefined", timeout=30_000)
    yield page
    ctx.close()


def run_kernel_raw(page, spec: dict) -> dict:
    """Run one WGSL kernel in the page (dlLLM.runKernel); {binding: bytes} of the bindings read back."""
    out = json.loads(page.evaluate("async (s) => await dlLLM.runKernel(s)", json.dumps(spec)))
    assert "error" not in out, out["error"]
    return {int(k): base64.b64decode(v) for k, v in out["outputs"].items()}
