"""Developer tools for finding where a plan's GPU time goes (browser-only; window.dlAmortize.check).

  profile       wall ms per dispatch of each distinct kernel of a plan (N repeats in one pass)
  gpu_profile   GPU ms per kernel kind over one real token, from timestamps written between the
                dispatches of one pass (needs chromium-experimental-timestamp-query-inside-passes);
                the amortize suite includes it with profile=1
  kernel_time   ms per dispatch of arbitrary WGSL sources on random data (tuning experiments)
"""
from __future__ import annotations


async def profile(lab, params: dict) -> dict:
    """Per-kernel ms (min over trials of N repeats in one pass) of each plan's first layer and head."""
    import js  # type: ignore
    from app.llm.model import PLANS
    from app.llm.session import get_model
    from app.plan import Plan, replay
    import app.llm.plans  # noqa: F401
    m = await get_model(lab, int(params.get("ctx", 64)))
    reps, trials = int(params.get("reps", 5)), int(params.get("trials", 3))
    probes = {}
    for plan in str(params.get("plans", "fused,token_pass")).split(","):
        spec = PLANS[plan]
        if getattr(spec, "prepare", None):
            await spec.prepare(m)
        for s in m.plan(plan, 0, True).steps:
            layer, _, name = s.label.rpartition(".")
            if layer.lstrip("f") not in ("", "0") and not s.label.startswith("f."):
                continue
            p = Plan()
            p.steps = [s] * reps
            probes.setdefault(f"{plan}:{s.label}", p)
    out = {k: [] for k in probes}
    for _ in range(trials):
        for key, p in probes.items():
            await replay(m.dev, p, "one_pass", "js")
            await m.dev.on_submitted_work_done()
            t0 = js.performance.now()
            await replay(m.dev, p, "one_pass", "js")
            await m.dev.on_submitted_work_done()
            out[key].append((float(js.performance.now()) - t0) / reps)
    return {k: round(min(v), 3) for k, v in out.items()}


async def kernel_time(lab, params: dict) -> dict:
    """Dev tool: ms per dispatch of WGSL sources on random data (min over trials, one pass of `reps`).
    params: {"variants": {name: {"code", "constants", "sizes": [bytes per binding], "workgroups"}}}"""
    import js  # type: ignore
    import numpy as np
    from app.gpu import COPY_DST, STORAGE, UNIFORM
    from app.plan import Plan, replay
    dev, out, plans = lab.dev, {}, {}
    rng = np.random.default_rng(0)
    for name, v in params["variants"].items():
        module = await dev.shader(v["code"], name)
        pipe = await dev.checked(name, dev.create_compute_pipeline, module, "main", v.get("constants") or {}, name)
        bufs = []
        for size in v["sizes"]:
            b = dev.create_buffer(size, STORAGE | COPY_DST, name)
            dev.write_buffer(b, 0, rng.integers(0, 255, size, dtype=np.uint8) & 0x3F)  # small finite floats
            bufs.append(b)
        bg = await dev.checked(name, dev.create_bind_group, pipe, bufs)
        p = Plan()
        for _ in range(int(params.get("reps", 4))):
            p.add(pipe, [bg], tuple(v["workgroups"]))
        plans[name] = p
        out[name] = []
    for _ in range(int(params.get("trials", 4))):
        for name, p in plans.items():
            await replay(dev, p, "one_pass", "js")
            await dev.on_submitted_work_done()
            t0 = js.performance.now()
            await replay(dev, p, "one_pass", "js")
            await dev.on_submitted_work_done()
            out[name].append((float(js.performance.now()) - t0) / len(p))
    if dev.uncaptured:
        raise RuntimeError("GPU errors: " + "; ".join(dev.uncaptured[-3:]))
    return {k: round(min(v), 3) for k, v in out.items()}


async def gpu_profile(lab, params: dict) -> dict:
    """Dev tool: GPU ms per kernel kind over one real token (timestamps between the dispatches of one
    pass; needs chromium-experimental-timestamp-query-inside-passes).  Feeds `prompt` then one token."""
    import numpy as np
    from app.gpu import COPY_SRC, QUERY_RESOLVE
    from app.llm.generate import write_step
    from app.llm.model import PLANS
    from app.llm.session import get_model
    from app.plan import replay
    import app.llm.plans  # noqa: F401
    if "chromium-experimental-timestamp-query-inside-passes" not in lab.dev.features:
        raise ValueError("this adapter cannot write timestamps inside a pass")
    m = await get_model(lab, 64)
    out = {}
    for run, plan in enumerate(str(params.get("plans", "fused,token_pass")).split(",")):
        spec = PLANS[plan]
        if getattr(spec, "prepare", None):
            await spec.prepare(m)
        prefix = [504, 3458, 282, 4649, 314]                          # a short real prefix
        if plan == "resident":                                        # its own state: counter and prompt
            from app.llm import resident
            m.dev.write_buffer(m.act["resident_state"], 0,
                               resident.state_init(m.cfg, m.resident_tuning, m.ctx, [*prefix, 30]))
            await replay(m.dev, resident.block_plan(m, len(prefix), False, False), "one_pass", "js")
            p = resident.block_plan(m, 1, True, True)
        else:
            p = m.plan(plan, 0, True)
            for pos, tok in enumerate(prefix):
                write_step(m, tok, pos)
                await replay(m.dev, p, "one_pass", "js")
        n = len(p.steps)
        qs = m.dev.create_query_set(n + 1)
        res = m.dev.create_buffer(8 * (n + 1), QUERY_RESOLVE | COPY_SRC, "profile")
        enc = m.dev.device.createCommandEncoder()
        cp = enc.beginComputePass()
        cp.writeTimestamp(qs, 0)
        for i, s in enumerate(p.steps):
            cp.setPipeline(s.pipeline)
            if s.offsets is not None:
                import js  # type: ignore
                cp.setBindGroup(0, s.bind_groups[0], js.Array.of(*s.offsets))
            else:
                cp.setBindGroup(0, s.bind_groups[0])
            cp.dispatchWorkgroups(*s.workgroups)
            cp.writeTimestamp(qs, i + 1)
        cp.end()
        enc.resolveQuerySet(qs, 0, n + 1, res, 0)
        m.dev.submit([enc.finish()])
        t = np.frombuffer(await m.dev.read_buffer(res, 8 * (n + 1)), np.uint64).astype(np.int64)
        kinds = {}
        for s, dt in zip(p.steps, np.diff(t)):
            name = s.label.rpartition(".")[2] if s.label[:1].isdigit() or s.label[1:2].isdigit() else s.label
            if plan == "resident" and name.isdigit():                 # r0.<step>: as the kernel decodes it
                name = resident.step_kind(int(name), m.cfg.n_layers, m.resident_tuning.split)
            kinds[name] = kinds.get(name, 0.0) + float(dt) / 1e6
        key = f"{run}:{plan}"
        out[key] = {k: round(v, 3) for k, v in kinds.items()}
        out[key]["total"] = round(float(t[-1] - t[0]) / 1e6, 3)
        qs.destroy()
        res.destroy()
    return out


async def encode_cost(lab, params: dict) -> dict:
    """Dev tool: CPU µs per dispatch to encode + submit N one_pass dispatches (no GPU wait in the timed
    part): app.plan's Python loop, the same loop with the pass's methods looked up once, and replay.js."""
    import js  # type: ignore
    from app.bench import dispatch as D
    from app.plan import replay_js, replay_python
    n = int(params.get("n", 1024))
    dev = lab.dev
    rig = await D.make_rig(dev, "f32", [n])
    plan = rig.plans[n]

    def cached(plan):
        enc = dev.device.createCommandEncoder()
        p = enc.beginComputePass()
        sbg, sp, dw = p.setBindGroup, p.setPipeline, p.dispatchWorkgroups
        for s in plan.steps:
            sbg(0, s.bind_groups[0])
            sp(s.pipeline)
            dw(*s.workgroups)
        p.end()
        dev.queue.submit(js.Array.of(enc.finish()))

    ways = {"plan_python": lambda: replay_python(dev, plan, "one_pass"), "cached_methods": lambda: cached(plan),
            "replay_js": lambda: replay_js(dev, plan, "one_pass")}
    out = {k: [] for k in ways}
    for _ in range(int(params.get("trials", 5))):
        for name, fn in ways.items():
            await dev.on_submitted_work_done()
            t0 = js.performance.now()
            fn()
            out[name].append((float(js.performance.now()) - t0) * 1000 / n)
    await dev.on_submitted_work_done()
    rig.buf.destroy()
    return {k: round(min(v), 2) for k, v in out.items()}
