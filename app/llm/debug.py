"""Debug entry points for the browser tests, installed as window.dlLLM (JSON strings in and out).

  await dlLLM.runKernel(spec)  run ONE kernel of wgsl/ on given data:
      spec = {"file", "entry"?, "constants", "workgroups": [x, y, z], "step"?: {"pos", "slot"},
              "buffers": [base64 bytes, one per non-step binding, in binding order], "read": [binding...]}
      → {"outputs": {binding: base64 bytes}}
  await dlLLM.profile(params)  GPU time per kernel of one token (each dispatch in its own timed pass)
      → {"kernels": {kernel: {"count", "ms"}}, "total_ms"}   (needs timestamp-query)
  await dlLLM.run(params)      run the llm suite with params (as the URL would give them) in this page,
      keeping the loaded model; params.capture_logits = true also returns every full forward's logits
      → {"section": {...}, "logits": [base64 float32, ...]}   (or {"error": message})
"""
from __future__ import annotations

import asyncio
import base64
import json

import numpy as np


async def run_kernel(dev, spec: dict) -> dict:
    from app.gpu import COPY_DST, COPY_SRC, STORAGE, UNIFORM
    from .kernels import STEP_STRIDE, load_kernel
    k = await load_kernel(dev, spec["file"], spec.get("entry", "main"), spec.get("constants") or {})
    datas = [base64.b64decode(b) for b in spec["buffers"]]
    entries, bufs, data_i = [], {}, 0
    step = spec.get("step") or {"pos": 0, "slot": 0}
    for b in k.bindings:
        if b.kind == "uniform_dynamic":
            buf = dev.create_buffer(STEP_STRIDE * (step["slot"] + 1), UNIFORM | COPY_DST, "steps")
            dev.write_buffer(buf, STEP_STRIDE * step["slot"], np.array([step["pos"], step["slot"], 0, 0], np.uint32))
        else:
            data = datas[data_i]
            data_i += 1
            usage = (UNIFORM if b.kind == "uniform" else STORAGE) | COPY_DST | COPY_SRC
            buf = dev.create_buffer(len(data), usage, b.name)
            dev.write_buffer(buf, 0, np.frombuffer(data, np.uint8))
        bufs[b.index] = buf
        entries.append(buf)
    bg = await dev.checked(f"binding {spec['file']}", k.bind, dev, entries)
    enc = dev.device.createCommandEncoder()
    p = enc.beginComputePass()
    p.setPipeline(k.pipeline)
    if k.dynamic:
        import js  # type: ignore
        p.setBindGroup(0, bg, js.Array.of(STEP_STRIDE * step["slot"]))
    else:
        p.setBindGroup(0, bg)
    p.dispatchWorkgroups(*spec["workgroups"])
    p.end()
    import js  # type: ignore
    dev.queue.submit(js.Array.of(enc.finish()))
    out = {}
    for i in spec.get("read", []):
        size = int(bufs[i].size)
        out[str(i)] = base64.b64encode(await dev.read_buffer(bufs[i], size)).decode()
    for buf in bufs.values():
        buf.destroy()
    if dev.uncaptured:
        raise RuntimeError("; ".join(dev.uncaptured[-3:]))
    return {"outputs": out}


async def run_suite(lab, params: dict) -> dict:
    from app.lab import describe
    from .suite import run
    logits = [] if params.get("capture_logits") else None
    lab.cancel_requested = False
    try:
        section = await run(lab, {k: str(v) for k, v in params.items() if k != "capture_logits"},
                            logits_out=logits)
    except BaseException as e:  # noqa: BLE001 - the test reads the message
        return {"error": describe(e)[1], "title": describe(e)[0]}
    return {"section": section, "logits": [base64.b64encode(x).decode() for x in (logits or [])]}


async def profile(lab, params: dict) -> dict:
    """Time every dispatch of one full token (pos 0, token params.token or 1) in its own pass."""
    import js  # type: ignore
    from app.gpu import COPY_SRC, QUERY_RESOLVE, js_obj
    from .generate import write_step
    from .session import get_model
    if "timestamp-query" not in lab.dev.features:
        return {"error": "this adapter has no timestamp-query"}
    m = await get_model(lab, 8, params.get("model"), tuning=params.get("tuning"))
    plan = m.plan("token_pass", 0, True)
    n = len(plan.steps)
    qs = lab.dev.create_query_set(2 * n)
    buf = lab.dev.create_buffer(16 * n, QUERY_RESOLVE | COPY_SRC, "profile")
    write_step(m, int(params.get("token", 1)), 0)
    enc = lab.dev.device.createCommandEncoder()
    for i, s in enumerate(plan.steps):
        p = enc.beginComputePass(js_obj({"timestampWrites": {"querySet": qs, "beginningOfPassWriteIndex": 2 * i,
                                                             "endOfPassWriteIndex": 2 * i + 1}}))
        p.setPipeline(s.pipeline)
        if s.offsets is not None:
            p.setBindGroup(0, s.bind_groups[0], js.Array.of(*s.offsets))
        else:
            p.setBindGroup(0, s.bind_groups[0])
        p.dispatchWorkgroups(*s.workgroups)
        p.end()
    enc.resolveQuerySet(qs, 0, 2 * n, buf, 0)
    lab.dev.queue.submit(js.Array.of(enc.finish()))
    t = np.frombuffer(await lab.dev.read_buffer(buf, 16 * n), np.uint64).astype(np.int64).reshape(n, 2)
    kernels = {}
    names = {id(k.pipeline): name for name, k in m.kernels.items()}
    for s, (b, e) in zip(plan.steps, t):
        name = names.get(id(s.pipeline), s.label)
        k = kernels.setdefault(name, {"count": 0, "ms": 0.0})
        k["count"] += 1
        k["ms"] += (e - b) / 1e6
    qs.destroy()
    buf.destroy()
    return {"kernels": kernels, "total_ms": float(sum(k["ms"] for k in kernels.values())),
            "span_ms": float((t[-1, 1] - t[0, 0]) / 1e6)}


def install(lab) -> None:
    """Expose window.dlLLM for tests (JSON strings in, JSON strings out)."""
    import js  # type: ignore
    from pyodide.ffi import create_proxy  # type: ignore

    def wrap(fn):
        async def call(arg):
            try:
                return json.dumps(await fn(json.loads(str(arg))))
            except BaseException as e:  # noqa: BLE001
                return json.dumps({"error": f"{type(e).__name__}: {e}"})
        # an asyncio Task reaches JS as a thenable, so page.evaluate can await it
        return create_proxy(lambda arg: asyncio.ensure_future(call(arg)))

    obj = js.Object.new()
    obj.runKernel = wrap(lambda spec: run_kernel(lab.dev, spec))
    obj.run = wrap(lambda params: run_suite(lab, params))
    obj.profile = wrap(lambda params: profile(lab, params))
    js.window.dlLLM = obj
