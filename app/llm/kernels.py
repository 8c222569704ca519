"""WGSL kernels from wgsl/*.wgsl with EXPLICIT bind group layouts.

Why explicit: the position-dependent kernels read a per-step uniform (``step``: pos, slot) bound at a
dynamic offset, one 256-byte slot per step, so one recorded dispatch list can serve any step and the
GPU-resident loop can address K steps in one submit.  ``hasDynamicOffset`` needs an explicit
GPUBindGroupLayout ("auto" layouts never have it).

The layout is read from the kernel file itself: every ``@group(0) @binding(i) var<...> name``
line becomes one entry; ``var<uniform> step`` is the dynamic one, other uniforms are static,
``var<storage, read>`` is read-only storage and ``var<storage, read_write>`` is storage.  So a new
kernel (a fused one, say) needs no Python layout code: ``await load_kernel(dev, "file.wgsl", ...)``.

``parse_bindings``/``layout_entries`` are pure (CPython-testable); the rest needs the browser.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

WGSL_DIR = Path(__file__).resolve().parents[2] / "wgsl"
STEP_UNIFORM = "step"          # the dynamic-offset uniform's variable name in every kernel
STEP_STRIDE = 256              # bytes between per-step uniform slots (max minUniformBufferOffsetAlignment)
STEP_BYTES = 16                # bound size of one slot: struct Step { pos: u32, slot: u32 } padded
COMPUTE = 0x4                  # GPUShaderStage.COMPUTE

_BINDING = re.compile(r"@group\(\s*0\s*\)\s*@binding\(\s*(\d+)\s*\)\s*var<\s*([a-z_]+)\s*(?:,\s*([a-z_]+)\s*)?>\s*(\w+)")


@dataclass(frozen=True)
class Binding:
    index: int
    kind: str       # "uniform_dynamic", "uniform", "read", "read_write"
    name: str


def parse_bindings(code: str) -> list[Binding]:
    """Group-0 bindings declared in WGSL source, sorted by index; raises ValueError on gaps/duplicates."""
    out = []
    for m in _BINDING.finditer(code):
        index, space, access, name = int(m.group(1)), m.group(2), m.group(3) or "", m.group(4)
        if space == "uniform":
            kind = "uniform_dynamic" if name == STEP_UNIFORM else "uniform"
        elif space == "storage":
            kind = "read_write" if access == "read_write" else "read"
        else:
            raise ValueError(f"binding {index} ({name}): unsupported address space {space!r}")
        out.append(Binding(index, kind, name))
    out.sort(key=lambda b: b.index)
    if [b.index for b in out] != list(range(len(out))):
        raise ValueError("bindings must be numbered 0, 1, 2, … without gaps or duplicates: "
                         + ", ".join(f"{b.index}:{b.name}" for b in out))
    return out


def layout_entries(bindings: list[Binding]) -> list[dict]:
    """GPUBindGroupLayoutEntry dicts for the bindings (pure)."""
    types = {"uniform_dynamic": {"type": "uniform", "hasDynamicOffset": True},
             "uniform": {"type": "uniform"},
             "read": {"type": "read-only-storage"},
             "read_write": {"type": "storage"}}
    return [{"binding": b.index, "visibility": COMPUTE, "buffer": types[b.kind]} for b in bindings]


def wgsl_source(file: str) -> str:
    path = WGSL_DIR / file
    try:
        return path.read_text()
    except OSError as e:
        raise OSError(f"kernel source {file} is missing from the site ({e})") from None


@dataclass
class Kernel:
    """A compiled compute pipeline plus the bind group layout its bind groups must use."""
    label: str
    pipeline: object
    layout: object            # GPUBindGroupLayout
    bindings: list
    dynamic: bool             # takes one dynamic offset (the step slot)

    def bind(self, dev, entries: list, label: str = ""):
        """entries: one per binding, a GPUBuffer or (buffer, offset, size); the step uniform is bound
        as its first slot (offset 0, STEP_BYTES) whatever is passed, the dynamic offset picks the slot."""
        from app.gpu import js_obj
        if len(entries) != len(self.bindings):
            raise ValueError(f"{self.label}: {len(entries)} buffers for {len(self.bindings)} bindings")
        js_entries = []
        for b, e in zip(self.bindings, entries):
            if b.kind == "uniform_dynamic":
                buf = e[0] if isinstance(e, tuple) else e
                res = {"buffer": buf, "offset": 0, "size": STEP_BYTES}
            elif isinstance(e, tuple):
                res = {"buffer": e[0], "offset": e[1], "size": e[2]}
            else:
                res = {"buffer": e}
            js_entries.append({"binding": b.index, "resource": res})
        return dev.device.createBindGroup(js_obj({"layout": self.layout, "entries": js_entries,
                                                  "label": label or self.label}))


async def load_kernel(dev, file: str, entry: str = "main", constants: dict | None = None,
                      label: str = "", cache: dict | None = None) -> Kernel:
    """Compile wgsl/<file> (cached per file in `cache`) and build its pipeline with an explicit layout."""
    from app.gpu import js_obj
    label = label or f"{file}:{entry}"
    cache = {} if cache is None else cache
    if file not in cache:  # one module and one layout per file: its entry points share bind groups
        code = wgsl_source(file)
        module, bindings = await dev.shader(code, file), parse_bindings(code)
        bgl = await dev.checked(f"creating the bind group layout of {file}", dev.device.createBindGroupLayout,
                                js_obj({"entries": layout_entries(bindings), "label": file}))
        pl = dev.device.createPipelineLayout(js_obj({"bindGroupLayouts": [bgl], "label": file}))
        cache[file] = (module, bindings, bgl, pl)
    module, bindings, bgl, pl = cache[file]
    compute = {"module": module, "entryPoint": entry}
    if constants:
        compute["constants"] = {k: float(v) if isinstance(v, float) else int(v) for k, v in constants.items()}
    pipeline = await dev.checked(f"creating the pipeline {label}", dev.device.createComputePipeline,
                                 js_obj({"layout": pl, "compute": compute, "label": label}))
    dynamic = any(b.kind == "uniform_dynamic" for b in bindings)
    return Kernel(label, pipeline, bgl, bindings, dynamic)
