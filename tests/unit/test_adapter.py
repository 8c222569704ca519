"""Pure adapter facts: the safety probe's reading (app.adapter.safety_facts)."""
from app.adapter import OOB_BASE, OOB_INDEX, safety_facts
from app.report import format_env


def test_safety_facts_names_each_outcome():
    zero = [0] * 128
    assert safety_facts(OOB_BASE + 3, zero) == {"out_of_bounds_read": "clamped to the binding",
                                                "workgroup_memory_before_write": "all zero", "safe": True}
    assert safety_facts(0, zero)["out_of_bounds_read"].startswith("zero")
    assert safety_facts(0, zero)["safe"]
    raw = safety_facts(OOB_BASE + OOB_INDEX, zero)
    assert raw["out_of_bounds_read"].startswith("unchecked") and not raw["safe"]
    assert safety_facts(OOB_BASE + 1, zero) == {"out_of_bounds_read": "kept inside the binding (word 1)",
                                                "workgroup_memory_before_write": "all zero", "safe": True}
    assert safety_facts(OOB_BASE + 9, zero)["out_of_bounds_read"] == f"another value in the buffer ({OOB_BASE + 9})"
    assert not safety_facts(OOB_BASE + 9, zero)["safe"]
    assert safety_facts(7, zero)["out_of_bounds_read"] == "unexpected value 7"
    dirty = safety_facts(OOB_BASE + 3, [0] * 120 + [0xa5a50001] * 8)
    assert dirty["workgroup_memory_before_write"] == "not zeroed (8 of 128 words held data)" and not dirty["safe"]


def test_env_lines_show_the_probe_and_the_launch():
    env = {"adapter": {"vendor": "v"}, "safety": {"status": "measured", **safety_facts(OOB_BASE + 3, [0])},
           "launch": {"via": "direct launch", "browser": "/b/chromium",
                      "flags": ["--headless", "--enable-dawn-features=disable_robustness"]}}
    text = format_env(env)
    assert "out-of-bounds read clamped to the binding" in text and "before a write all zero" in text
    assert "launched by bench (direct launch): /b/chromium, --enable-dawn-features=disable_robustness" in text
    assert "host" not in text                               # older results have no host block
    env["host"] = {"cpu": "Intel(R) Xeon(R) Platinum 8480+", "logical_cpus": 16, "os": "Linux 6.8",
                   "load_1min_at_start": 0.4, "load_1min_at_end": 2.5}
    assert ("host (seen by bench): Intel(R) Xeon(R) Platinum 8480+, 16 logical CPUs, Linux 6.8; 1-minute load "
            "average 0.4 at the start, 2.5 at the end") in format_env(env)
    failed = format_env({"safety": {"status": "the probe failed: boom"}})
    assert "safety checks (probed): the probe failed: boom" in failed
