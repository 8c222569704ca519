"""Pure facts about a WebGPU adapter from its info dict (app.gpu.adapter_info); runs in CPython too."""


def is_cpu(info: dict) -> bool:
    """A software (CPU) adapter: the browser's fallback adapter, or SwiftShader reported as a regular one.
    Kernel shapes and benchmark sizes differ there, since kernel time, not dispatch cost, dominates."""
    return bool(info.get("isFallbackAdapter")) or info.get("architecture") == "swiftshader"


OOB_BASE = 1000          # wgsl/probe_safety.wgsl: word i of the probe's source buffer holds OOB_BASE + i
OOB_INDEX = 5            # the word `oob` reads through a 4-word binding


def safety_facts(oob_value: int, before_write: list[int]) -> dict:
    """What wgsl/probe_safety.wgsl saw, in words: how an out-of-bounds storage read came back (word OOB_INDEX
    through a binding of words 0..3), and what workgroup memory held before its first write.  WebGPU promises
    the first is kept inside the binding and the second is zero; Chromium keeps both unless
    --enable-dawn-features=disable_robustness / disable_workgroup_init turns them off, and both cost GPU time in
    every dispatch, so results say which ran."""
    v = int(oob_value)
    inside = v == 0 or OOB_BASE <= v < OOB_BASE + 4             # what WebGPU allows: a word of the binding, or 0
    oob = {OOB_BASE + 3: "clamped to the binding", 0: "zero (a bounds check, in the shader or the driver)",
           OOB_BASE + OOB_INDEX: "unchecked (read past the binding)"}.get(v)
    if oob is None:
        oob = (f"kept inside the binding (word {v - OOB_BASE})" if inside else
               f"another value in the buffer ({v})" if OOB_BASE <= v < OOB_BASE + 64 else f"unexpected value {v}")
    nonzero = sum(1 for w in before_write if w)
    wg = "all zero" if not nonzero else f"not zeroed ({nonzero} of {len(before_write)} words held data)"
    return {"out_of_bounds_read": oob, "workgroup_memory_before_write": wg, "safe": inside and not nonzero}
