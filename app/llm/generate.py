"""Greedy generation on the GPU, driven token by token from Python, with honest counters.

    from app.llm.session import get_model
    from app.llm.generate import generate
    model = await get_model(lab, ctx_len)                 # ctx_len = len(prompt_ids) + max_new
    result = await generate(lab, model, prompt_ids, max_new, plan="token_pass", driver="python",
                            on_token=None)               # on_token(token_id, text_piece)
    # result: prompt_tokens, ttft_ms, decode_tok_per_s, dispatches_per_token, submits_per_token,
    #         readbacks_per_token, gpu_ms_per_token, generated_token_ids, text, stopped, plan, driver, …

plan: a key of app.llm.model.PLANS (op_by_op, token_encoder, token_pass, + what others register: a
PlanSpec's optional `prepare(model)` is awaited first, and an optional `generate(...)` replaces this
token loop); driver: "python" or "js" (app.plan.replay).  The prompt is fed token by token (positions 0..n-1);
prompt tokens before the last run the plan without head/argmax.  Each token that yields a new id runs
the full plan, then reads back tokens[1] (4 bytes: the only readback per token).  Generation stops at
EOS, at max_new, or when lab.cancel_requested is set (Stop): then the result holds what was made so
far, with stopped = "cancelled".  Counters are summed from every replay actually made, and compared
by the caller with the plan's declared count.

Timing (page clock, performance.now): ttft_ms = start → first new token read back (prompt included);
decode_tok_per_s = new tokens / (last token read back − prefill finished with the GPU idle), i.e. the
rate of the forwards that produce tokens, the same definition as the GPU loop's so plans compare.
decode_after_first_tok_per_s = tokens after the first delivery / (last read back − first read back): the
definition that every engine can be measured by from its token stream alone (the compare suite's, wllama's
included; llama.cpp's eval rate and the usual time per output token after the first).  It leaves out the
first token's latency (the GPU's start and its first readback), which the first definition charges to decode.
"""
from __future__ import annotations

import numpy as np

from .kernels import STEP_STRIDE
from .model import PLANS, Model

TIMED_TOKENS = 512                     # GPU timestamps for at most this many tokens per run


def after_first(tokens: int, ms: float):
    """decode_after_first_tok_per_s: `tokens` delivered after the first delivery, `ms` after it; None when
    there are none (a one-token answer) or no time passed."""
    return round(tokens * 1000 / ms, 3) if tokens > 0 and ms > 0 else None


def _now() -> float:
    import js  # type: ignore
    return float(js.performance.now())


class Counters:
    def __init__(self):
        self.dispatches = self.submits = self.readbacks = 0

    def add(self, counts: dict) -> None:
        self.dispatches += counts["dispatches"]
        self.submits += counts["submits"]


class GpuTimer:
    """Four timestamps per timed token (begin/end of its first and of its last timed pass), resolved
    and read once at the end of the run, so timing adds no per-token readback."""

    def __init__(self, dev, tokens: int):
        from app.gpu import COPY_SRC, QUERY_RESOLVE
        self.dev, self.cap = dev, tokens
        self.qs = dev.create_query_set(4 * tokens)
        self.buf = dev.create_buffer(32 * tokens, QUERY_RESOLVE | COPY_SRC, "timestamps")
        self.used = 0
        self.single_pass = True

    def next(self):
        """(querySet, first index) for the next token, or None once the set is full."""
        if self.used >= self.cap:
            return None
        self.used += 1
        return (self.qs, 4 * self.used - 4)

    def destroy(self) -> None:
        self.qs.destroy()
        self.buf.destroy()

    async def read_ms(self) -> list[float]:
        if not self.used:
            return []
        import js  # type: ignore
        enc = self.dev.device.createCommandEncoder()
        enc.resolveQuerySet(self.qs, 0, 4 * self.used, self.buf, 0)
        self.dev.queue.submit(js.Array.of(enc.finish()))
        raw = np.frombuffer(await self.dev.read_buffer(self.buf, 32 * self.used), dtype=np.uint64)
        t = raw.reshape(-1, 4).astype(np.int64)
        end = t[:, 1] if self.single_pass else t[:, 3]
        return [float(x) / 1e6 for x in (end - t[:, 0])]


async def _run(dev, plan, mode: str, driver: str, counters: Counters, ts=None) -> None:
    """Replay one token's plan.  With timestamps: one_pass wraps its single pass; sequential times its
    first pass's start to its last pass's end by replaying the first and last steps as one-step
    one_pass plans (the same one encoder/pass/submit each, so nothing extra is submitted)."""
    from app.plan import replay
    if ts is None or mode not in ("one_pass", "sequential"):
        await replay(dev, plan, mode, driver)
        counters.add(plan.counts(mode))
        return
    qs, i = ts
    if mode == "one_pass":
        await replay(dev, plan, mode, driver, timestamps=(qs, i, i + 1))
        counters.add(plan.counts(mode))
        return
    first, mid, last = _split(plan)
    await replay(dev, first, "one_pass", driver, timestamps=(qs, i, i + 1))      # i: the token's start
    await replay(dev, mid, "sequential", driver)
    await replay(dev, last, "one_pass", driver, timestamps=(qs, i + 2, i + 3))   # i + 3: its end
    for p, md in ((first, "one_pass"), (mid, "sequential"), (last, "one_pass")):
        counters.add(p.counts(md))


def _split(plan):
    if not hasattr(plan, "_split"):
        from app.plan import Plan
        parts = [Plan(), Plan(), Plan()]
        for i, s in enumerate(plan.steps):
            parts[0 if i == 0 else 2 if i == len(plan.steps) - 1 else 1].steps.append(s)
        plan._split = parts
    return plan._split


class Readback:
    """tokens[slot + 1] → host through one persistent staging buffer (1 copy submit + 1 map per token)."""

    def __init__(self, dev):
        from app.gpu import COPY_DST, MAP_READ
        self.dev = dev
        self.staging = dev.create_buffer(256, MAP_READ | COPY_DST, "token readback")

    async def token(self, tokens_buf, slot: int) -> int:
        import js  # type: ignore
        from app.gpu import MAP_READ
        enc = self.dev.device.createCommandEncoder()
        enc.copyBufferToBuffer(tokens_buf, 4 * (slot + 1), self.staging, 0, 4)
        self.dev.queue.submit(js.Array.of(enc.finish()))
        await self.staging.mapAsync(MAP_READ, 0, 4)
        value = int(js.Uint32Array.new(self.staging.getMappedRange(0, 4))[0])
        self.staging.unmap()
        self.dev.raise_if_lost()
        return value

    def destroy(self) -> None:
        self.staging.destroy()


def write_step(m: Model, token: int | None, pos: int, slot: int = 0) -> None:
    """Host side of the token state: tokens[slot] = token (unless None) and steps[slot] = {pos, slot}."""
    if token is not None:
        m.dev.write_buffer(m.act["tokens"], 4 * slot, np.array([token], np.uint32))
    m.dev.write_buffer(m.act["steps"], STEP_STRIDE * slot, np.array([pos, slot, 0, 0], np.uint32))


def check_request(m: Model, prompt_ids: list, max_new: int) -> None:
    if not prompt_ids:
        raise ValueError("the prompt is empty: type some text to continue")
    if max_new < 1:
        raise ValueError(f"max new tokens must be at least 1 (got {max_new})")
    need = len(prompt_ids) + max_new
    if need > m.cfg.ctx:
        raise ValueError(f"the prompt ({len(prompt_ids)} tokens) plus {max_new} new tokens is {need} tokens, "
                         f"over the model's context length of {m.cfg.ctx}; shorten the prompt or ask for fewer tokens")
    if need > m.ctx:
        raise ValueError(f"the KV cache holds {m.ctx} positions but this run needs {need}")


async def generate(lab, m: Model, prompt_ids: list, max_new: int, plan: str = "token_pass",
                   driver: str = "python", on_token=None, logits_out: list | None = None) -> dict:
    """Greedy generation; see the module docstring.  logits_out (debug): gets the float32 logits of
    each full forward (extra readbacks, not counted in the metrics)."""
    if plan not in PLANS:
        raise ValueError(f"unknown plan {plan!r}; choose one of {', '.join(PLANS)}")
    if driver not in ("python", "js"):
        raise ValueError(f"unknown driver {driver!r}; choose python or js")
    check_request(m, prompt_ids, max_new)
    spec = PLANS[plan]
    if getattr(spec, "prepare", None) is not None:
        await spec.prepare(m)
    if getattr(spec, "generate", None) is not None:
        return await spec.generate(lab, m, prompt_ids, max_new, driver, on_token, logits_out)
    loop = _TokenLoop(m, plan, spec, driver, max_new)
    try:
        t0 = _now()
        cancelled = await loop.prefill(lab, prompt_ids[:-1])
        await m.dev.on_submitted_work_done()  # decode timing starts with the GPU idle
        t_dec = _now()
        stopped = "cancelled" if cancelled else await loop.decode(lab, prompt_ids[-1], len(prompt_ids) - 1,
                                                                  on_token, logits_out)
        gpu_ms = await loop.timer.read_ms() if loop.timer else []
    finally:
        loop.destroy()
    return _result(loop, prompt_ids, stopped, gpu_ms, t0, t_dec)


class _TokenLoop:
    """One run's state: recorded plans, counters, readback, timer, and the tokens made so far."""

    def __init__(self, m: Model, plan: str, spec, driver: str, max_new: int):
        self.m, self.plan, self.spec, self.driver, self.max_new = m, plan, spec, driver, max_new
        self.full, self.pre = m.plan(plan, 0, True), m.plan(plan, 0, False)
        timed = "timestamp-query" in m.dev.features and spec.mode in ("one_pass", "sequential")
        self.timer = GpuTimer(m.dev, min(TIMED_TOKENS, max_new)) if timed else None
        if self.timer:
            self.timer.single_pass = spec.mode == "one_pass"
        self.rb, self.pre_c, self.dec_c = Readback(m.dev), Counters(), Counters()
        self.decoder, self.pieces, self.out = m.tokenizer.stream_decoder(skip_special=True), [], []
        self.t_first = self.t_last = None

    async def prefill(self, lab, ids: list) -> bool:
        """Feed ids at positions 0.. without the head; True if Stop was pressed meanwhile."""
        for pos, tok in enumerate(ids):
            if lab.cancel_requested:
                return True
            write_step(self.m, tok, pos)
            await _run(self.m.dev, self.pre, self.spec.mode, self.driver, self.pre_c)
        return False

    async def decode(self, lab, tok: int, pos: int, on_token, logits_out) -> str:
        """Feed tok at pos, read the new token back, repeat; return why it stopped."""
        m = self.m
        while True:
            write_step(m, tok, pos)
            await _run(m.dev, self.full, self.spec.mode, self.driver, self.dec_c,
                       self.timer.next() if self.timer else None)
            nxt = await self.rb.token(m.act["tokens"], 0)
            self.dec_c.readbacks += 1
            self.t_last = _now()
            self.t_first = self.t_first if self.t_first is not None else self.t_last
            if logits_out is not None:
                logits_out.append(await m.dev.read_buffer(m.act["logits"], 4 * m.cfg.vocab))
            if not 0 <= nxt < m.cfg.vocab:
                raise ArithmeticError(f"argmax returned {nxt}: the logits were all NaN (a numerical fault in a kernel)")
            self.out.append(nxt)
            piece = self.decoder.feed(nxt)
            self.pieces.append(piece)
            if on_token is not None:
                on_token(nxt, piece)
            if nxt == m.cfg.eos_id:
                return "eos"
            if len(self.out) >= self.max_new:
                return "max_new_tokens"
            if lab.cancel_requested:
                return "cancelled"
            tok, pos = nxt, pos + 1

    def destroy(self) -> None:
        self.rb.destroy()
        if self.timer:
            self.timer.destroy()


def _result(loop: _TokenLoop, prompt_ids: list, stopped: str, gpu_ms: list, t0: float, t_dec: float) -> dict:
    out, spec, m = loop.out, loop.spec, loop.m
    n = max(len(out), 1)
    dec = loop.t_last - t_dec if out else None
    return {
        "prompt_tokens": len(prompt_ids),
        "generated_token_ids": out,
        "text": "".join(loop.pieces) + loop.decoder.flush(),
        "stopped": stopped,
        "ttft_ms": round(loop.t_first - t0, 3) if out else None,
        "decode_tok_per_s": round(len(out) * 1000 / dec, 3) if out and dec > 0 else None,
        "decode_ms_per_token": round(dec / len(out), 3) if out else None,
        "decode_after_first_tok_per_s": after_first(len(out) - 1, loop.t_last - loop.t_first) if out else None,
        "dispatches_per_token": loop.dec_c.dispatches / n,
        "expected_dispatches_per_token": spec.dispatches(m.cfg, True),
        "prefill_dispatches_per_token": loop.pre_c.dispatches / (len(prompt_ids) - 1) if len(prompt_ids) > 1 else None,
        "expected_prefill_dispatches_per_token": spec.dispatches(m.cfg, False),
        "submits_per_token": (loop.dec_c.submits + loop.dec_c.readbacks) / n,  # the readback's copy is a submit
        "readbacks_per_token": loop.dec_c.readbacks / n,
        "gpu_ms_per_token": round(float(np.mean(gpu_ms)), 4) if gpu_ms else "unsupported",
        "gpu_timing": _timing_note(m.dev, spec.mode, gpu_ms),
        "plan": loop.plan, "mode": spec.mode, "driver": loop.driver,
        "wall_s": round((_now() - t0) / 1000, 3),
    }


def _timing_note(dev, mode: str, gpu_ms: list) -> str:
    if "timestamp-query" not in dev.features:
        return "this adapter has no timestamp-query"
    if mode == "one_pass":
        return f"timestampWrites around each token's single pass ({len(gpu_ms)} tokens)"
    if mode == "sequential":
        return f"first pass start to last pass end of each token, GPU idle gaps between submits included ({len(gpu_ms)} tokens)"
    return f"not measured in {mode} mode: app.plan.replay can only time one_pass passes"

