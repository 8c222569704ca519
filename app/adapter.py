"""Pure facts about a WebGPU adapter from its info dict (app.gpu.adapter_info); runs in CPython too."""


def is_cpu(info: dict) -> bool:
    """A software (CPU) adapter: the browser's fallback adapter, or SwiftShader reported as a regular one.
    Kernel shapes and benchmark sizes differ there, since kernel time, not dispatch cost, dominates."""
    return bool(info.get("isFallbackAdapter")) or info.get("architecture") == "swiftshader"
