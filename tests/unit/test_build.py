"""build.py: hash verification, atomic builds, and the local server's rules (no browser needed)."""
from __future__ import annotations

import http.client
import json
import queue
import threading
from pathlib import Path

import pytest

import build


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "CACHE", tmp_path / "cache")
    (tmp_path / "cache").mkdir()
    return tmp_path / "cache"


def test_npm_mismatch_names_file_and_hashes(tmp_cache, monkeypatch):
    def fake_pack(cmd, what, cwd):
        (Path(cwd) / "coi-serviceworker-0.1.7.tgz").write_bytes(b"not the real tarball")
    monkeypatch.setattr(build, "run_client", fake_pack)
    spec = {"version": "0.1.7", "integrity": "sha512-AAAA"}
    with pytest.raises(build.BuildError) as e:
        build.fetch_npm("coi-serviceworker", spec, [])
    msg = str(e.value)
    assert "coi-serviceworker-0.1.7.tgz" in msg and "expected: sha512-AAAA" in msg and "actual:   sha512-" in msg
    assert "fetch" in msg  # says what to do
    assert not (tmp_cache / "npm" / "coi-serviceworker-0.1.7.tgz").exists()


def test_cached_file_is_reused_without_download(tmp_cache, monkeypatch):
    data = b"pinned bytes"
    dest = tmp_cache / "npm" / "x-1.0.0.tgz"
    dest.parent.mkdir()
    dest.write_bytes(data)
    monkeypatch.setattr(build, "run_client", lambda *a: pytest.fail("downloaded although cached"))
    downloads = []
    spec = {"version": "1.0.0", "integrity": build.npm_integrity(dest)}
    assert build.fetch_npm("x", spec, downloads) == dest and downloads == []


def test_missing_client_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(build.shutil, "which", lambda name: None)
    with pytest.raises(build.BuildError, match="`npm` is not installed"):
        build.run_client(["npm", "pack", "x"], "npm x", Path("."))


def test_wheel_member_mismatch(tmp_path):
    import zipfile
    whl = tmp_path / "p.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("p/assets/numpy.whl", b"tampered")
    dest = tmp_path / "out" / "numpy.whl"
    with pytest.raises(build.BuildError, match="numpy.whl"):
        build.extract_member(whl, "p/assets/numpy.whl", dest, "0" * 64, "Pyodide wheel numpy", [])
    assert not dest.exists() and not dest.with_suffix(".whl.part").exists()
    with pytest.raises(build.BuildError, match="has no p/assets/missing.whl"):
        build.extract_member(whl, "p/assets/missing.whl", dest, "0" * 64, "x", [])


def test_failed_build_leaves_previous_site_untouched(tmp_path, monkeypatch):
    out = tmp_path / "dist"
    out.mkdir()
    (out / "index.html").write_text("previous")
    calls = {"n": 0}
    real_place = build.place

    def flaky(src, dst):
        calls["n"] += 1
        if calls["n"] > 3:
            raise build.BuildError("disk full (simulated)")
        real_place(src, dst)
    monkeypatch.setattr(build, "place", flaky)
    assets = build.fetch()
    with pytest.raises(build.BuildError):
        build.build(assets, out=out)
    assert (out / "index.html").read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["dist"]  # no half-built folder left behind


# ------------------------------------------------------------------------------------------ server
@pytest.fixture
def served(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<h1>hi</h1>")
    (site / "x.wasm").write_bytes(b"\0asm")
    (tmp_path / "secret.txt").write_text("outside")
    sink = queue.Queue()
    httpd = build.make_server("127.0.0.1", 0, site, sink)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1], sink
    httpd.shutdown()


def request(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    return r.status, dict(r.getheaders()), r.read()


def test_headers_and_mime(served):
    port, _ = served
    status, h, _ = request(port, "GET", "/x.wasm")
    h = {k.lower(): v for k, v in h.items()}
    assert status == 200 and h["content-type"] == "application/wasm"
    assert h["cross-origin-opener-policy"] == "same-origin" and h["cross-origin-embedder-policy"] == "require-corp"
    status, h, body = request(port, "HEAD", "/index.html")
    assert status == 200 and body == b"" and int(h["Content-Length"]) == len("<h1>hi</h1>")


def test_nothing_outside_the_site(served):
    port, _ = served
    for path in ("/../secret.txt", "/..%2fsecret.txt", "/%2e%2e/secret.txt"):
        status, _, body = request(port, "GET", path)
        assert b"outside" not in body


def test_results_endpoint_accepts_only_valid_bounded_json(served, monkeypatch):
    port, sink = served
    ok = json.dumps({"schema": "dispatchlab/1"}).encode()
    assert request(port, "POST", "/api/results", ok, {"Content-Type": "application/json"})[0] == 200
    assert sink.get_nowait() == ("results", {"schema": "dispatchlab/1"})
    assert request(port, "POST", "/api/results", b"{nope")[0] == 400
    assert request(port, "POST", "/api/results", b"[1,2]")[0] == 400
    assert request(port, "POST", "/api/other", ok)[0] == 404
    big = b" " * (build.MAX_PROGRESS_BYTES + 1)
    assert request(port, "POST", "/api/progress", big)[0] == 413
    assert sink.empty()


def test_results_endpoint_rejects_non_loopback(served, monkeypatch):
    port, sink = served
    monkeypatch.setattr(build, "is_loopback", lambda host: False)
    assert request(port, "POST", "/api/results", b"{}")[0] == 403
    assert sink.empty()


def test_is_loopback():
    assert build.is_loopback("127.0.0.1") and build.is_loopback("::1") and not build.is_loopback("10.0.0.1")
    assert not build.is_loopback("not-an-address")


def test_bench_url_forwards_parameters():
    import argparse
    a = argparse.Namespace(suite="llm", quick=True, prompt="a b&c", max_new_tokens=4, plan="fused", driver="js", k=3,
                           runs=None, chat=True, param=["tuning=gpu"])
    url = build.bench_url("http://127.0.0.1:1/", a)
    assert url.startswith("http://127.0.0.1:1/?suite=llm&autorun=1&report=1&quick=1")
    for part in ("prompt=a+b%26c", "max_new_tokens=4", "plan=fused", "driver=js", "k=3", "chat=1", "tuning=gpu"):
        assert part in url
    a.param = ["novalue"]
    with pytest.raises(build.BuildError, match="KEY=VALUE"):
        build.bench_url("http://127.0.0.1:1/", a)


def test_browser_flags_take_a_single_dashed_flag():
    """`--browser-flags "--enable-dawn-features=X"` (no space in the value) reaches the bench as its value."""
    assert build.glue_flag_values(["bench", "--browser-flags", "--enable-dawn-features=x", "--quick"]) == \
        ["bench", "--browser-flags=--enable-dawn-features=x", "--quick"]
    assert build.glue_flag_values(["bench", "--browser-flags"]) == ["bench", "--browser-flags"]
    launched = []
    orig = build.bench
    try:
        build.bench = lambda args: launched.append(args.browser_flags) or 0
        assert build.main(["bench", "--browser-flags", "--enable-dawn-features=x"]) == 0
    finally:
        build.bench = orig
    assert launched == ["--enable-dawn-features=x"]


def test_the_reference_results_are_valid_and_the_panel_asks_for_them():
    """build.py REFERENCE ships committed results files with the site: each must pass the same validation as an
    import, and the dispatch panel's button must ask for one of them."""
    from app import report
    panel = (build.ROOT / "app" / "ui" / "dispatch_panel.py").read_text()
    for site_path, repo_path in build.REFERENCE.items():
        doc = report.parse((build.ROOT / repo_path).read_text(), repo_path)
        assert doc["dispatch"]["rows"] and doc["env"]["adapter"]["isFallbackAdapter"] is False
        assert f'"{site_path}"' in panel


def test_cpu_model_reads_the_first_model_name_and_falls_back():
    info = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R)  Xeon(R) CPU @ 2.20GHz\n\n" \
           "processor\t: 1\nmodel name\t: other\n"
    assert build.cpu_model(info) == "Intel(R) Xeon(R) CPU @ 2.20GHz"
    assert build.cpu_model("processor : 0\nModel : Raspberry Pi 4 Model B\n") == "Raspberry Pi 4 Model B"
    assert build.cpu_model("processor : 0\n") == (build.platform.processor() or "unknown")


def test_host_facts_name_the_cpu_and_the_load_at_both_ends():
    facts = build.host_facts(0.25)
    assert facts["load_1min_at_start"] == 0.25 and facts["logical_cpus"] == build.os.cpu_count()
    end = facts["load_1min_at_end"]
    assert end == "unsupported here" or (isinstance(end, float) and end >= 0)
    assert facts["cpu"] and facts["os"].startswith(build.platform.system())
