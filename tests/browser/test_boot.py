"""The page boots offline, fills the environment card, and explains a missing WebGPU without a traceback."""
from conftest import CHROMIUM_FLAGS, launch, open_lab, page_text_has_no_traceback


def test_boots_offline_and_fills_env_card(page, server):
    assert open_lab(page, server) == "ready"
    assert page.external_requests == []
    card = page.inner_text("#env-card")
    for needle in ("User agent", "Adapter", "Fallback adapter", "Cross-origin isolated", "Timer resolution", "Features",
                   "maxStorageBufferBindingSize"):
        assert needle in card
    assert "Out-of-bounds storage read (probed)\nclamped to the binding" in card      # SwiftShader keeps both
    assert "Workgroup memory before a write (probed)\nall zero" in card
    assert page.evaluate("crossOriginIsolated") is True
    assert page.input_value("#amortize-k") == "4"          # the form's K is the code's default (gpu_loop.DEFAULT_K)
    assert page_text_has_no_traceback(page)


def test_no_webgpu_gets_explanation(playwright_instance, server):
    flags = [f for f in CHROMIUM_FLAGS if f != "--enable-unsafe-webgpu"]
    b = launch(playwright_instance, flags)
    try:
        p = b.new_page()
        p.goto(server.url)
        p.wait_for_selector("#status[data-state=error]", timeout=120_000)
        box = p.inner_text("#error")
        assert "WebGPU is not available" in box
        assert "enable-unsafe-webgpu" in box
        assert page_text_has_no_traceback(p)
    finally:
        b.close()


def test_env_card_flags_a_browser_without_its_safety_checks(playwright_instance, server):
    """Launched with Dawn's disable_robustness, the page's probe reads past its binding, and the environment card
    says the numbers are not comparable with a browser's defaults."""
    flags = [f for f in CHROMIUM_FLAGS if not f.startswith("--enable-dawn-features=")]
    b = launch(playwright_instance, flags + ["--enable-dawn-features=disable_robustness"])
    try:
        p = b.new_page()
        assert open_lab(p, server) == "ready"
        card = p.inner_text("#env-card")
        assert "Out-of-bounds storage read (probed)\nunchecked (read past the binding)" in card
        assert "without one of its safety checks" in card and "not comparable" in card
        assert page_text_has_no_traceback(p)
    finally:
        b.close()


def test_isolated_without_server_headers(page, site):
    """A host that cannot set COOP/COEP (plain static server) still gets isolation via coi-serviceworker."""
    import functools
    import http.server
    import threading
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        page.goto(f"http://127.0.0.1:{httpd.server_address[1]}/")
        page.wait_for_selector("#status[data-state=ready]", timeout=120_000)
        assert page.evaluate("crossOriginIsolated") is True
        assert "Cross-origin isolated\nTrue" in page.inner_text("#env-card")
    finally:
        httpd.shutdown()
