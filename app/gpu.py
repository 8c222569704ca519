"""Thin layer over ``navigator.gpu`` through Pyodide's JS FFI.

Names mirror WebGPU in snake_case (``create_buffer`` is ``device.createBuffer``); descriptor fields
are keyword arguments.  Departures from the spec, all deliberate:

- ``Device.request()`` bundles requestAdapter + requestDevice, asks for every optional feature we use
  that the adapter has, and raises ``WebGPUUnavailable`` with a human explanation instead of
  returning null.
- Creation calls that can fail validation are wrapped by ``await dev.checked(what, fn)``: an error
  scope around one call, re-raised as ``GPUError`` naming what was being created.
- ``device.lost`` is watched from the start; ``dev.lost_reason`` is set when it resolves, and every
  later ``checked``/``read_buffer`` raises ``DeviceLost``.
- ``read_buffer`` copies a GPU buffer into numpy (copy + map + one copy into wasm memory).

Everything here is browser-only (imports ``js``); nothing here knows about benchmarks or LLMs.
"""
from __future__ import annotations

import asyncio

import js  # type: ignore  # Pyodide only
from pyodide.ffi import to_js, create_proxy  # type: ignore

MAP_READ = 0x0001
MAP_WRITE = 0x0002
COPY_SRC = 0x0004
COPY_DST = 0x0008
INDEX = 0x0010
UNIFORM = 0x0040
STORAGE = 0x0080
QUERY_RESOLVE = 0x0200

OPTIONAL_FEATURES = ("timestamp-query", "shader-f16", "subgroups", "chromium-experimental-timestamp-query-inside-passes")


class WebGPUUnavailable(Exception):
    """WebGPU cannot be used here; ``str(e)`` explains why, ``e.help`` how to enable it."""

    def __init__(self, reason: str, help: str = ""):
        super().__init__(reason)
        self.help = help


class GPUError(Exception):
    """A WebGPU validation or out-of-memory error, naming what was being done."""


class DeviceLost(GPUError):
    pass


class Unsupported(GPUError):
    """Found while running: this adapter cannot do what was asked (e.g. resident persist=1 where a dispatch's
    workgroups are not all resident at once); the plan is reported unsupported here, the rest of the run goes on."""


ENABLE_HELP = ("Use a browser with WebGPU enabled: Chrome/Edge 113+ on Windows, macOS or ChromeOS, "
               "Chrome on Linux with chrome://flags/#enable-unsafe-webgpu (or the command-line flag "
               "--enable-unsafe-webgpu), Safari 26+, or Firefox 141+ on Windows. Headless Chromium needs "
               "--enable-unsafe-webgpu. The page must be served over https or from localhost.")


def js_obj(d):
    """Python dict/list → plain JS objects/arrays (never a JS Map, which WebGPU rejects)."""
    return to_js(d, dict_converter=js.Object.fromEntries)


def _setlike(s) -> list[str]:
    return sorted(str(x) for x in js.Array.from_(s))


class Device:
    def __init__(self, adapter, device, info: dict):
        self.adapter = adapter
        self.device = device
        self.queue = device.queue
        self.adapter_info = info
        self.features = set(_setlike(device.features))
        self.adapter_features = set(_setlike(adapter.features))
        self.limits = {k: getattr(device.limits, k) for k in LIMIT_KEYS if hasattr(device.limits, k)}
        self.lost_reason: str | None = None
        self.uncaptured: list[str] = []
        self._on_error = create_proxy(self._uncaptured)
        device.onuncapturederror = self._on_error
        self._lost_task = asyncio.ensure_future(self._watch_lost())

    # ------------------------------------------------------------------ creation
    @classmethod
    async def request(cls, power_preference: str = "high-performance") -> "Device":
        gpu = getattr(js.navigator, "gpu", None)
        if gpu is None:
            raise WebGPUUnavailable("This browser does not expose WebGPU (navigator.gpu is missing).", ENABLE_HELP)
        try:
            adapter = await gpu.requestAdapter(js_obj({"powerPreference": power_preference}))
        except Exception as e:  # noqa: BLE001 - JS errors arrive as JsException
            raise WebGPUUnavailable(f"requestAdapter() failed: {e}", ENABLE_HELP)
        if adapter is None:
            raise WebGPUUnavailable("WebGPU is present but no GPU adapter is available (requestAdapter() returned null).",
                                    ENABLE_HELP)
        have = set(_setlike(adapter.features))
        want = [f for f in OPTIONAL_FEATURES if f in have]
        limits = {k: getattr(adapter.limits, k) for k in REQUEST_LIMITS if hasattr(adapter.limits, k)}
        try:
            device = await adapter.requestDevice(js_obj({"requiredFeatures": want, "requiredLimits": limits}))
        except Exception as e:  # noqa: BLE001
            raise WebGPUUnavailable(f"requestDevice() failed: {e}", ENABLE_HELP)
        return cls(adapter, device, adapter_info(adapter))

    def create_buffer(self, size: int, usage: int, label: str = "", mapped_at_creation: bool = False):
        size = max(4, (int(size) + 3) & ~3)
        return self.device.createBuffer(js_obj({"size": size, "usage": usage, "label": label,
                                                "mappedAtCreation": mapped_at_creation}))

    def create_shader_module(self, code: str, label: str = ""):
        return self.device.createShaderModule(js_obj({"code": code, "label": label}))

    def create_compute_pipeline(self, module, entry_point: str = "main", constants: dict | None = None,
                                label: str = ""):
        compute = {"module": module, "entryPoint": entry_point}
        if constants:
            compute["constants"] = constants
        return self.device.createComputePipeline(js_obj({"layout": "auto", "compute": compute, "label": label}))

    def create_bind_group(self, pipeline, entries: list, group: int = 0, label: str = ""):
        """entries: buffers, or (buffer, offset, size) tuples, bound at 0, 1, 2 … in order."""
        js_entries = []
        for i, e in enumerate(entries):
            if isinstance(e, tuple):
                buf, off, size = e
                js_entries.append({"binding": i, "resource": {"buffer": buf, "offset": off, "size": size}})
            else:
                js_entries.append({"binding": i, "resource": {"buffer": e}})
        return self.device.createBindGroup(js_obj({"layout": pipeline.getBindGroupLayout(group),
                                                   "entries": js_entries, "label": label}))

    def create_query_set(self, count: int, type: str = "timestamp"):
        return self.device.createQuerySet(js_obj({"type": type, "count": count}))

    def create_command_encoder(self):
        return self.device.createCommandEncoder()

    # ------------------------------------------------------------------ errors
    async def checked(self, what: str, fn, *args, **kwargs):
        """Run one creation call inside validation + out-of-memory error scopes."""
        self.raise_if_lost()
        self.device.pushErrorScope("out-of-memory")
        self.device.pushErrorScope("validation")
        result = fn(*args, **kwargs)
        validation = await self.device.popErrorScope()
        oom = await self.device.popErrorScope()
        if oom is not None:
            raise GPUError(f"out of GPU memory while {what}: {oom.message}")
        if validation is not None:
            raise GPUError(f"WebGPU validation error while {what}: {validation.message}")
        return result

    async def shader(self, code: str, label: str):
        """Create and compile a shader module; raise GPUError with the compiler's messages."""
        module = await self.checked(f"compiling {label}", self.create_shader_module, code, label)
        info = await module.getCompilationInfo()
        errors = [f"{label}:{m.lineNum}:{m.linePos}: {m.message}" for m in info.messages if m.type == "error"]
        if errors:
            raise GPUError("WGSL compilation failed:\n" + "\n".join(errors))
        return module

    def _uncaptured(self, event):
        self.uncaptured.append(str(event.error.message))

    async def _watch_lost(self):
        info = await self.device.lost
        self.lost_reason = f"{info.reason}: {info.message}" if info.message else str(info.reason)

    def raise_if_lost(self):
        if self.lost_reason is not None:
            raise DeviceLost(f"the GPU device was lost ({self.lost_reason}); reload the page to start again")

    # ------------------------------------------------------------------ queue
    def write_buffer(self, buf, offset: int, data) -> None:
        """data: numpy array, bytes or a JS typed array/ArrayBuffer."""
        if hasattr(data, "tobytes") or isinstance(data, (bytes, bytearray, memoryview)):
            data = to_js(memoryview(data).cast("B"))
        self.queue.writeBuffer(buf, offset, data)

    def submit(self, command_buffers) -> None:
        self.queue.submit(command_buffers)

    async def on_submitted_work_done(self) -> None:
        await self.queue.onSubmittedWorkDone()
        self.raise_if_lost()

    async def read_buffer(self, buf, size: int, offset: int = 0):
        """Copy size bytes of buf into a fresh staging buffer and return them as bytes."""
        self.raise_if_lost()
        size = (size + 3) & ~3
        staging = self.create_buffer(size, MAP_READ | COPY_DST, "readback")
        enc = self.device.createCommandEncoder()
        enc.copyBufferToBuffer(buf, offset, staging, 0, size)
        self.queue.submit([enc.finish()])
        await staging.mapAsync(MAP_READ)
        data = js.Uint8Array.new(staging.getMappedRange()).to_py().tobytes()
        staging.unmap()
        staging.destroy()
        return data

    def destroy(self) -> None:
        self.device.destroy()
        self._on_error.destroy()


LIMIT_KEYS = ("maxComputeWorkgroupStorageSize", "maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupSizeX",
              "maxComputeWorkgroupsPerDimension", "maxStorageBufferBindingSize", "maxBufferSize",
              "maxStorageBuffersPerShaderStage", "maxUniformBufferBindingSize", "maxBindGroups",
              "minUniformBufferOffsetAlignment", "minStorageBufferOffsetAlignment",
              "maxDynamicUniformBuffersPerPipelineLayout", "maxImmediateSize", "maxSubgroupSize", "minSubgroupSize")
# Limits we raise to the adapter's maximum (a 98 MB model and big storage bindings need more than defaults).
REQUEST_LIMITS = ("maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupStorageSize",
                  "maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupSizeX", "maxStorageBuffersPerShaderStage",
                  "maxComputeWorkgroupsPerDimension")


def adapter_info(adapter) -> dict:
    info = getattr(adapter, "info", None)
    out = {}
    for k in ("vendor", "architecture", "device", "description", "subgroupMinSize", "subgroupMaxSize"):
        v = getattr(info, k, None) if info is not None else None
        if v is not None:
            out[k] = v
    fb = getattr(info, "isFallbackAdapter", None)
    if fb is None:
        fb = getattr(adapter, "isFallbackAdapter", None)
    out["isFallbackAdapter"] = None if fb is None else bool(fb)
    return out
