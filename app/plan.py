"""A recorded plan: a fixed list of dispatch steps, built once, replayed many times.

A step is (pipeline, bind groups, workgroup counts, dynamic offsets).  Replay encodes the list in one
of four submission modes, driven either call by call from Python (through the JS FFI: that cost is part
of what we measure) or by one FFI call into ``static/replay.js``, which encodes the same list in JS.

Modes, from most to least submission overhead:
  naive        per step: encoder, pass, dispatch, submit, await onSubmittedWorkDone
  sequential   per step: encoder, pass, dispatch, submit; one await at the end  (the paper's method)
  one_encoder  one encoder, one compute pass per step, one submit
  one_pass     one encoder, one compute pass holding every dispatch, one submit

The pure part (Step, Plan, counting) runs in CPython; replay needs the browser.
"""
from __future__ import annotations

from dataclasses import dataclass, field

try:
    import js  # type: ignore  # Pyodide
except ImportError:  # CPython: only the pure parts (Step, Plan, counts) are used
    js = None

MODES = ("naive", "sequential", "one_encoder", "one_pass")
DRIVERS = ("python", "js")


@dataclass
class Step:
    pipeline: object
    bind_groups: list
    workgroups: tuple = (1, 1, 1)
    offsets: list | None = None     # dynamic offsets for bind group 0, or None
    label: str = ""
    keep_state: bool = False        # one_pass: same pipeline and bind groups as the step before, so only
                                    # dispatchWorkgroups is encoded (other modes open a pass per step and set all)


@dataclass
class Plan:
    steps: list = field(default_factory=list)
    _js: object = None              # the JS array, built once on first JS replay
    _offsets_ready: bool = False    # dynamic offsets converted to JS arrays (first Python replay)

    def add(self, pipeline, bind_groups, workgroups=(1, 1, 1), offsets=None, label="", keep_state=False):
        wg = tuple(workgroups) + (1,) * (3 - len(tuple(workgroups)))
        if keep_state and (not self.steps or self.steps[-1].pipeline is not pipeline
                           or self.steps[-1].bind_groups != list(bind_groups) or offsets is not None):
            raise ValueError(f"step {label!r}: keep_state needs the previous step's pipeline and bind groups "
                             "and no dynamic offsets")
        self.steps.append(Step(pipeline, list(bind_groups), wg, offsets, label, keep_state))
        self._js, self._offsets_ready = None, False

    def extend(self, other: "Plan"):
        self.steps.extend(other.steps)
        self._js, self._offsets_ready = None, False

    def __len__(self):
        return len(self.steps)

    def counts(self, mode: str) -> dict:
        """Dispatches, passes, submits and awaits one replay of this plan makes in a mode."""
        n = len(self.steps)
        return {"dispatches": n,
                "passes": 1 if mode == "one_pass" else n,
                "submits": n if mode in ("naive", "sequential") else 1,
                "awaits": n if mode == "naive" else 1}

    def to_js(self):
        """[[pipeline, [bindGroup...], x, y, z, offsets|null, keep_state], ...] as one JS array (cached)."""
        if self._js is None:
            from pyodide.ffi import to_js  # type: ignore
            rows = [[s.pipeline, list(s.bind_groups), *s.workgroups, s.offsets, s.keep_state] for s in self.steps]
            self._js = to_js(rows)
        return self._js


def _encode(pass_, step):
    _encode_steps(pass_, (step,), False)


def _encode_steps(pass_, steps, one_pass=True):
    """Encode steps into one pass.  The pass's three methods are looked up once: each attribute access
    through the FFI makes a new bound-method proxy, and that is most of the Python driver's excess."""
    set_bind_group, set_pipeline, dispatch = pass_.setBindGroup, pass_.setPipeline, pass_.dispatchWorkgroups
    for step in steps:
        if one_pass and step.keep_state:
            x, y, z = step.workgroups
            dispatch(x, y, z)
            continue
        for i, bg in enumerate(step.bind_groups):
            if i == 0 and step.offsets is not None:
                set_bind_group(0, bg, step._js_offsets)
            else:
                set_bind_group(i, bg)
        set_pipeline(step.pipeline)
        x, y, z = step.workgroups
        dispatch(x, y, z)


def _prepare_offsets(plan: Plan):
    if plan._offsets_ready:
        return
    for s in plan.steps:
        if s.offsets is not None and not hasattr(s, "_js_offsets"):
            s._js_offsets = _js_array(s.offsets)
    plan._offsets_ready = True


def _js_array(values):
    a = js.Array.new()
    for v in values:
        a.push(v)
    return a


def _pass_desc(timestamps):
    if timestamps is None:
        return None
    from .gpu import js_obj
    qs, begin, end = timestamps
    return js_obj({"timestampWrites": {"querySet": qs, "beginningOfPassWriteIndex": begin,
                                       "endOfPassWriteIndex": end}})


def replay_python(dev, plan: Plan, mode: str, timestamps=None, copies=None):
    """Encode and submit plan in mode, call by call from Python.  Returns None, or for naive mode an
    awaitable.  timestamps=(querySet, begin, end) wraps the single pass of one_pass mode; copies, a list of
    copyBufferToBuffer argument tuples, are encoded after the pass(es) of one_encoder / one_pass mode, in the
    same command buffer (a block loop's readback)."""
    if mode == "naive":
        _prepare_offsets(plan)
        return _replay_naive(dev, plan)
    if mode == "sequential":
        _prepare_offsets(plan)
        for s in plan.steps:
            _submit_one(dev.device, dev.queue, s)
        return None
    dev.queue.submit(js.Array.of(encode_python(dev, plan, mode, timestamps, copies)))
    return None


def encode_python(dev, plan: Plan, mode: str, timestamps=None, copies=None):
    """The command buffer of plan in one_encoder or one_pass mode (with timestamps and copies as in
    replay_python), encoded call by call from Python and not submitted."""
    _prepare_offsets(plan)
    enc = dev.device.createCommandEncoder()
    if mode == "one_encoder":
        for s in plan.steps:
            p = enc.beginComputePass()
            _encode(p, s)
            p.end()
    elif mode == "one_pass":
        desc = _pass_desc(timestamps)
        p = enc.beginComputePass(desc) if desc is not None else enc.beginComputePass()
        _encode_steps(p, plan.steps)
        p.end()
    elif mode in MODES:
        raise ValueError(f"mode {mode!r} submits as it encodes; only one_encoder and one_pass encode ahead")
    else:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    for c in copies or ():
        enc.copyBufferToBuffer(*c)
    return enc.finish()


def _submit_one(device, queue, step):
    """One step in its own encoder, pass and submit."""
    enc = device.createCommandEncoder()
    p = enc.beginComputePass()
    _encode(p, step)
    p.end()
    queue.submit(js.Array.of(enc.finish()))


async def _replay_naive(dev, plan: Plan):
    for s in plan.steps:
        _submit_one(dev.device, dev.queue, s)
        await dev.queue.onSubmittedWorkDone()


def replay_js(dev, plan: Plan, mode: str, timestamps=None, copies=None):
    """Same as replay_python, in one FFI call into static/replay.js.  Naive mode returns a promise."""
    jc = js.Array.of(*[js.Array.of(*c) for c in copies]) if copies else None
    qs, begin, end = timestamps if timestamps is not None else (None, 0, 0)
    return js.dlReplay.replay(dev.device, plan.to_js(), mode, qs, begin, end, jc)


def encode_js(dev, plan: Plan, mode: str, timestamps=None, copies=None):
    """Same as encode_python, in one FFI call into static/replay.js."""
    jc = js.Array.of(*[js.Array.of(*c) for c in copies]) if copies else None
    qs, begin, end = timestamps if timestamps is not None else (None, 0, 0)
    return js.dlReplay.encode(dev.device, plan.to_js(), mode, qs, begin, end, jc)


def encode(dev, plan: Plan, mode: str, driver: str = "python", timestamps=None, copies=None):
    """The plan's command buffer, encoded by driver and not submitted (one_encoder and one_pass modes)."""
    return (encode_python if driver == "python" else encode_js)(dev, plan, mode, timestamps, copies)


async def replay(dev, plan: Plan, mode: str, driver: str = "python", timestamps=None, copies=None):
    """Replay and, for naive mode, wait for each step (other modes return right after submit)."""
    fn = replay_python if driver == "python" else replay_js
    r = fn(dev, plan, mode, timestamps, copies)
    if r is not None:
        await r
