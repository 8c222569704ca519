"""`build.py bench` without Playwright: it launches the browser binary itself and gets results by POST."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT, chromium_path

from app import report


def run_bench(site, tmp_path, *extra, timeout=600):
    out = tmp_path / "r.json"
    cmd = [sys.executable, str(ROOT / "build.py"), "bench", "--dist", str(site), "--browser", chromium_path(),
           "--json", str(out), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p, out


def test_direct_launch_dispatch_quick(site, tmp_path):
    p, out = run_bench(site, tmp_path, "--suite", "dispatch", "--quick")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "driver=direct launch" in p.stdout
    doc = json.loads(out.read_text())
    report.validate(doc)
    assert doc["env"]["adapter"]["architecture"]
    launch = doc["env"]["launch"]                          # recorded by bench: the page cannot see its flags
    assert launch["via"] == "direct launch" and launch["browser"] == chromium_path()
    assert "--enable-unsafe-webgpu" in launch["flags"]
    host = doc["env"]["host"]                              # the host's CPU, which the CPU-bound rows depend on
    assert host["cpu"] and host["logical_cpus"] >= 1 and "host (seen by bench): " in p.stdout
    safety = doc["env"]["safety"]                          # probed on the adapter (SwiftShader keeps both checks)
    assert safety["status"] == "measured" and safety["safe"], safety
    assert safety["workgroup_memory_before_write"] == "all zero"
    assert "safety checks (probed): out-of-bounds read" in p.stdout
    assert "one_pass" in p.stdout and "sequential" in p.stdout  # the printed table
    assert "[" in p.stdout and "%]" in p.stdout  # progress lines were shown


def test_the_safety_probe_sees_robustness_turned_off(site, tmp_path):
    """With Dawn's disable_robustness the probe's read past its 4-word binding returns the word itself (SwiftShader),
    and the results say the run was not safe; the flags that did it are in env.launch."""
    p, out = run_bench(site, tmp_path, "--suite", "dispatch", "--quick",
                       "--browser-flags", "--enable-dawn-features=disable_robustness")
    assert p.returncode == 0, p.stdout + p.stderr
    env = json.loads(out.read_text())["env"]
    assert "--enable-dawn-features=disable_robustness" in env["launch"]["flags"]
    assert env["safety"]["out_of_bounds_read"] == "unchecked (read past the binding)" and not env["safety"]["safe"]
    assert "launched by bench (direct launch)" in p.stdout and "disable_robustness" in p.stdout


def test_timeout_reports_last_progress(site, tmp_path):
    p, out = run_bench(site, tmp_path, "--suite", "dispatch", "--timeout", "8", timeout=120)
    assert p.returncode == 2
    assert "no results within 8 s" in p.stdout
    assert "Last progress:" in p.stdout or "sent no progress" in p.stdout
    assert not out.exists()


def test_bad_dist_is_a_clear_error(tmp_path):
    p = subprocess.run([sys.executable, str(ROOT / "build.py"), "bench", "--dist", str(tmp_path), "--browser",
                        chromium_path()], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert "not a built Dispatch Lab site" in p.stderr and "Traceback" not in p.stderr


def test_a_page_that_fails_to_start_is_reported_not_waited_for(site, tmp_path):
    """A site whose panel code cannot import (as when a stale site lacks a new module) fails at start: the
    page says so and POSTs the error, so bench ends at once with the message instead of at its timeout."""
    import shutil
    broken = tmp_path / "broken"
    shutil.copytree(site, broken)
    (broken / "app" / "ui" / "llm_panel.py").write_text("from app.no_such_module import x\n")
    p, out = run_bench(broken, tmp_path, "--suite", "dispatch", "--quick", "--timeout", "120", timeout=200)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "the page reported an error" in p.stdout and "no_such_module" in p.stdout
    assert "Traceback" not in p.stdout + p.stderr
