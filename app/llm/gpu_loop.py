"""The `gpu_loop` plan: K tokens per submit, the token loop stays on the GPU, one readback per K tokens.

    result = await generate(lab, model, prompt_ids, max_new, driver="python", on_token=None, k=4)

A block of L ≤ K steps is ONE recorded plan: the fused dispatches of slots 0..L-1 back to back in one
compute pass.  Step j reads its input token from tokens[j] and its position from steps[j] (dynamic
offset j·256); its argmax writes tokens[j + 1], which step j + 1's embedding reads, so the CPU never
touches a token inside a block.  Per block the CPU writes the L step uniforms (one writeBuffer, queued
after the previous block, so blocks never see each other's positions), replays the plan, and submits
one small copy command buffer: tokens[1..L] → a staging buffer (the block's only readback) and
tokens[L] → carry → tokens[0] (the next block's first input; a buffer cannot copy onto itself).

Blocks in flight: blocks b + 1 … b + depth − 1 (DEPTH = 4 by default; URL parameter depth=1..8) are encoded
and submitted before block b's readback is awaited, so the CPU encodes while the GPU computes.  Decode blocks
ramp up, 1, 1, 2, 3, 4, 6, 9, … tokens until K (decode_lengths; URL parameter ramp=0 for fixed blocks of K),
so that the GPU starts after one token's encoding instead of K tokens'.  The ramp needs more than 2 blocks
in flight: a small block's readback takes longer than its GPU work, and with 2 the CPU waits for it before
encoding the block after next.  H200, 128 tokens, K = 8, wall ms per token (results/2026-12-03-nvidia-h200-fb16):
ramp with 4 in flight 0.719–0.723, with 3 0.720–0.724; fixed blocks with 2 0.739–0.747, with 3 0.736–0.742;
ramp with 2 0.763.  On a 30-token answer (results/2026-12-03-nvidia-h200-touch, K = 16, Python driver) the
ramp gives 1,105–1,285 tok/s (median 1,259) against 930–1,001 with fixed blocks: the first block of 16
cost ~10 ms of encoding before the GPU started.  (One earlier compare run with the ramp, …-fb16/7-compare-ramp,
had two of three timed runs at ~400 tok/s.  Nothing that slow recurred in 14 timed runs that tested the ramp
or in the runs with these defaults (…-touch), but 3 of the latter's 30 timed runs, each the first of its
row, were 5–20 ms late with normal GPU time: their first readback came late, so the stall is on the CPU or
readback side.  Every run records each block's submit and readback time, its GPU time and the GPU's idle
time before the next block, `block_timing_runs`, which is how that shows.)
EOS (or max_new) inside a block truncates the output there; the tokens computed after it,
and the blocks already in flight (up to depth − 1), are discarded (counted as `wasted_tokens`).
The last block is shortened to what max_new still needs, so the KV cache never goes past
len(prompt) + max_new positions.  Prompt tokens but the last are fed in blocks of K without the head.

Metrics match app/llm/generate.py's keys.  Differences, by design: decode rate = tokens delivered ÷
(last readback − decode start), since a whole block arrives at once; the rate after the first delivery counts
the tokens delivered after the first block's (its tokens arrive together); dispatches and submits per token
count every token computed (delivered or discarded), so they equal the declared counts.
"""
from __future__ import annotations

import numpy as np

from app.params import FALSE, TRUE, whole_number_or

from .fused import declared, prepare, record_fused
from .kernels import STEP_STRIDE
from .model import MAX_SLOTS

DEFAULT_K = 4                  # tokens per block: results/2026-12-06-nvidia-h100-ksweep (H100, resident, 2 rounds × 3 runs,
#   both drivers).  EOS is seen only when its block is read back, so the tokens that block computes after EOS delay
#   the answer: (K - 1) / 2 on average.  A 30-token answer: K = 4 1,321 (JS) / 1,364 (Python) tok/s, K = 8 1,278 /
#   1,284, K = 16 1,093 / 1,079.  128 tokens without EOS: K = 4 1,423 / 1,425, K = 8 1,435 / 1,427, K = 16 1,433 /
#   1,424 (each block costs ~0.04 ms more).  K = 4 wins for answers up to ~250 tokens and loses < 1% beyond.
DEPTH = 4                      # blocks in flight
RAMP = True                    # decode blocks ramp up to K


def parse_k(value) -> int:
    """K from a URL/form value (None or "" → DEFAULT_K); ValueError with a message for the page."""
    return whole_number_or(value, DEFAULT_K, 1, MAX_SLOTS, "k (tokens per submit)")


def block_lengths(total: int, k: int) -> list[int]:
    """Split `total` steps into blocks of k, the last one shorter."""
    return [min(k, total - i) for i in range(0, total, k)]


def decode_lengths(total: int, k: int, ramp: bool = False) -> list[int]:
    """The decode blocks of `total` tokens: blocks of k, or (ramp) 1, 1, 2, 3, 4, 6, 9, … up to k first.

    The GPU cannot start before the CPU has encoded the first block, so a first block of k tokens leaves it
    idle for k tokens' worth of encoding.  With blocks in flight each block is encoded while the GPU runs the
    one before, so the GPU stays busy as long as a block's encoding takes no longer than the previous block's
    GPU time: growing by about 1.5× at a time keeps that while encoding costs up to 2/3 of the GPU time
    (with DEPTH blocks in flight, so that the CPU is not held up by the small blocks' readbacks)."""
    if not ramp:
        return block_lengths(total, k)
    out, n, length = [], 0, 1
    while n < total:
        out.append(min(length, k, total - n))
        n += out[-1]
        if len(out) > 1:
            length = min(k, length + max(1, length // 2))
    return out


def parse_depth(value) -> int:
    """Blocks in flight from a URL/form value (None or "" → DEPTH); ValueError with a message for the page."""
    return whole_number_or(value, DEPTH, 1, 8, "depth (blocks in flight)")


def _flag(value, default: bool, name: str) -> bool:
    """A flag from a URL/form value (None or "" → default); ValueError with a message for anything else."""
    v = str(value if value is not None else "").strip().lower()
    if v == "":
        return default
    if v not in TRUE + FALSE:
        raise ValueError(f"{name} must be 1 or 0 (on or off), got {value!r}")
    return v in TRUE


def parse_ramp(value) -> bool:
    """ramp from a URL/form value (None or "" → RAMP); ValueError with a message for anything but a flag."""
    return _flag(value, RAMP, "ramp")


OPTIONS = {"copy_apart": False,      # set by app.bench.amortize.set_tuning from the URL parameters copy_apart,
           "poke_us": 0,             # poke
           "poke_with": "write",     # poke_with
           "gpu_timing": True,       # gpu_timing
           "encode_ahead": True}     # and encode_ahead
UNTIMED = "not measured (gpu_timing=0)"


def parse_gpu_timing(value) -> bool:
    """gpu_timing from a URL/form value (None or "" → on): 0 writes no timestamps around the blocks' passes, so
    that an A/B run shows what the timing itself costs the decode rate (GPU times then read UNTIMED)."""
    return _flag(value, True, "gpu_timing")


def parse_encode_ahead(value) -> bool:
    """encode_ahead from a URL/form value (None or "" → on): the first decode block is encoded while the GPU still
    runs the prefill and submitted as soon as decode timing starts; 0 encodes it after that start, as before
    2026-12-07, for A/B runs.  Neither changes what is computed: the block reads its token and position on the GPU."""
    return _flag(value, True, "encode_ahead")


def parse_copy_apart(value) -> bool:
    """copy_apart from a URL/form value (None or "" → off): 1 submits each block's readback copy in a command
    buffer of its own after the block's (2 submits a block, as before 2026-12-05), for A/B runs."""
    return _flag(value, False, "copy_apart")


def parse_poke(value) -> int:
    """poke from a URL/form value (None or "" → 0, off): the waits that decide the answer's timing, the end of the
    prefill, the first readback (the time to the first token) and the last (every block submitted, no other in
    flight), are awaited with a poke (parse_poke_with) at most every `poke` µs until they resolve
    (static/replay.js pokeUntil), so that Chromium's GPU process looks for the finished work then instead of at
    its next 1-2 ms timer tick.  The other readbacks are not poked: later blocks keep the GPU busy meanwhile."""
    return whole_number_or(value, 0, 0, 100_000, "poke (µs between pokes)")


POKE_WITH = ("write", "submit")


def parse_poke_with(value) -> str:
    """poke_with from a URL/form value (None or "" → write): what each poke is, a 4-byte writeBuffer into a scratch
    buffer or an empty queue submit (the only kind before 2026-12-07).  Both make Chromium's GPU process look for
    finished work at once; on an H100 a wait of ~3 ms for a big pass came out 0.5-0.7 ms shorter with writes and
    0.3-0.7 ms longer with empty submits, which cost the GPU process more (results/2026-12-07-nvidia-h100-readback)."""
    v = str(value if value is not None else "").strip().lower() or "write"
    if v not in POKE_WITH:
        raise ValueError(f"poke_with must be one of {', '.join(POKE_WITH)}, got {value!r}")
    return v


def truncate(tokens: list[int], room: int, eos_id) -> tuple[list[int], bool]:
    """The tokens to deliver from a block: at most `room`, ending at the first EOS (kept, like the
    reference's greedy).  Returns (tokens, stop)."""
    out = []
    for t in tokens[:room]:
        out.append(t)
        if t == eos_id:
            return out, True
    return out, len(out) >= room


def block_plan(m, length: int, logits: bool):
    """The recorded plan of one block (cached on the model like its other plans)."""
    from app.plan import Plan
    key = ("gpu_loop_block", length, logits)
    if key not in m._plans:
        p = Plan()
        for slot in range(length):
            p.extend(record_fused(m, slot, logits))
        m._plans[key] = p
    return m._plans[key]


def warm(m, prompt_len: int, max_new: int, k: int, ramp: bool = RAMP) -> None:
    """Record (and build the JS arrays of) every block plan a run of this shape will replay, so that a
    timed run does not pay for first-use recording."""
    for length in set(decode_lengths(max_new, k, ramp)):
        block_plan(m, length, True).to_js()
    for length in set(block_lengths(prompt_len - 1, k)):
        block_plan(m, length, False).to_js()


def write_steps(m, first_pos: int, length: int) -> None:
    steps = np.zeros((length, STEP_STRIDE // 4), np.uint32)
    steps[:, 0] = np.arange(first_pos, first_pos + length)
    steps[:, 1] = np.arange(length)
    m.dev.write_buffer(m.act["steps"], 0, steps)


def _now() -> float:
    import js  # type: ignore
    return float(js.performance.now())


class Loop:
    """GPU-side state of one run: staging buffers, carry, optional timestamps, counters."""

    def __init__(self, m, driver: str, k: int, n_blocks: int, depth: int = DEPTH, apart: bool = False):
        from app.gpu import COPY_DST, COPY_SRC, MAP_READ, QUERY_RESOLVE
        self.m, self.dev, self.driver, self.k, self.depth, self.apart = m, m.dev, driver, k, depth, apart
        self.poke_us, self.pokes = OPTIONS["poke_us"], 0    # read(last=True): pokes while it is awaited
        self.poke_with = OPTIONS["poke_with"]
        self.scratch = (self.dev.create_buffer(4, COPY_DST, "gpu_loop poke scratch")
                        if self.poke_us and self.poke_with == "write" else None)
        self.staging = [self.dev.create_buffer(4 * k, MAP_READ | COPY_DST, f"gpu_loop readback {i}")
                        for i in range(depth)]
        self.carry = self.dev.create_buffer(16, COPY_SRC | COPY_DST, "gpu_loop carry")
        self.timed = OPTIONS["gpu_timing"] and "timestamp-query" in self.dev.features
        self.untimed = UNTIMED if "timestamp-query" in self.dev.features and not self.timed else "unsupported"
        if self.timed:
            self.qs = self.dev.create_query_set(2 * n_blocks)
            self.ts = self.dev.create_buffer(16 * n_blocks, QUERY_RESOLVE | COPY_SRC, "gpu_loop timestamps")
        self.dispatches = self.submits = self.readbacks = self.computed = self.blocks = self._encoded = 0
        self.gpu_gaps: list[float] = []      # gpu_ms(): GPU ms from each block's pass end to the next one's start

    async def replay(self, plan, timestamps=None, copies=None) -> None:
        from app.plan import replay
        await replay(self.dev, plan, "one_pass", self.driver, timestamps=timestamps, copies=copies)
        c = plan.counts("one_pass")
        self.dispatches += c["dispatches"]
        self.submits += c["submits"]

    def encode_block(self, pos: int, length: int) -> tuple:
        """One block's command buffer with its readback copy (apart: the copy in a command buffer of its own),
        not yet submitted.  Blocks must be submitted in the order they are encoded."""
        from app.plan import encode
        b = self.blocks + self._encoded
        st = self.staging[b % self.depth]
        copies = self.copy_out(pos, length, st)
        ts = (self.qs, 2 * b, 2 * b + 1) if self.timed else None
        plan = self.block(pos, length)
        cmd = encode(self.dev, plan, "one_pass", self.driver, ts, None if self.apart else copies)
        extra = None
        if self.apart:
            enc = self.dev.device.createCommandEncoder()
            for c in copies:
                enc.copyBufferToBuffer(*c)
            extra = enc.finish()
        self._encoded += 1
        return cmd, extra, plan.counts("one_pass")["dispatches"], st, length

    def submit_block(self, encoded: tuple):
        """Submit a block from encode_block; returns (staging buffer, length, its map promise)."""
        import js  # type: ignore
        from app.gpu import MAP_READ
        cmd, extra, dispatches, st, length = encoded
        self.dev.queue.submit(js.Array.of(cmd))
        self.submits += 1
        if extra is not None:
            self.dev.queue.submit(js.Array.of(extra))
            self.submits += 1
        self.dispatches += dispatches
        self._encoded -= 1
        self.readbacks += 1
        self.computed += length
        self.blocks += 1
        return st, length, st.mapAsync(MAP_READ, 0, 4 * length)

    def block(self, pos: int, length: int):
        """The decode block's plan (this plan: positions from the step uniforms written here)."""
        write_steps(self.m, pos, length)
        return block_plan(self.m, length, True)

    def copy_out(self, pos: int, length: int, st) -> list[tuple]:
        """The block's readback copies (copyBufferToBuffer arguments) into st: tokens[1..length], and
        tokens[length] → carry → tokens[0]."""
        tokens = self.m.act["tokens"]
        return [(tokens, 4, st, 0, 4 * length), (tokens, 4 * length, self.carry, 0, 4), (self.carry, 0, tokens, 0, 4)]

    async def wait(self, promise, poke: bool = False) -> None:
        """Await a JS promise; with `poke` and poke_us, poking (static/replay.js pokeUntil) until it settles."""
        import js  # type: ignore
        if poke and self.poke_us:
            self.pokes += int(await js.dlReplay.pokeUntil(self.dev.queue, promise, self.poke_us, self.scratch))
        else:
            await promise

    async def read(self, pending, poke: bool = False) -> list[int]:
        """The block's tokens; with `poke` and poke_us, poked until they arrive."""
        import js  # type: ignore
        st, length, promise = pending
        await self.wait(promise, poke)
        out = [int(v) for v in js.Uint32Array.new(st.getMappedRange(0, 4 * length)).to_py()]
        st.unmap()
        self.dev.raise_if_lost()
        return out

    async def gpu_ms(self) -> list[float]:
        if not self.timed or not self.blocks:
            return []
        import js  # type: ignore
        enc = self.dev.device.createCommandEncoder()
        enc.resolveQuerySet(self.qs, 0, 2 * self.blocks, self.ts, 0)
        self.dev.queue.submit(js.Array.of(enc.finish()))
        raw = np.frombuffer(await self.dev.read_buffer(self.ts, 16 * self.blocks), np.uint64).astype(np.int64)
        pairs = raw.reshape(-1, 2)
        self.gpu_gaps = [float(s - e) / 1e6 for e, s in zip(pairs[:-1, 1], pairs[1:, 0])]
        return [float(e - s) / 1e6 for s, e in pairs]

    def destroy(self) -> None:
        for b in (*self.staging, self.carry, *((self.ts, self.qs) if self.timed else ()),
                  *((self.scratch,) if self.scratch is not None else ())):
            b.destroy()


async def prefill(m, loop: Loop, ids: list[int]) -> None:
    """Feed ids at positions 0.. in blocks of k without the head (their logits are never read)."""
    pos = 0
    for length in block_lengths(len(ids), loop.k):
        m.dev.write_buffer(m.act["tokens"], 0, np.array(ids[pos:pos + length], np.uint32))
        write_steps(m, pos, length)
        await loop.replay(block_plan(m, length, False))
        pos += length


class FusedLoop:
    """How the gpu_loop plan runs a loop: the fused kernels with per-step uniforms (see the module doc).
    app/llm/resident.py gives the same shape for the resident plan; `run` drives either."""
    name = "gpu_loop"

    async def prepare(self, m) -> None:
        await prepare(m)

    def loop(self, m, driver: str, k: int, n_blocks: int, depth: int = DEPTH, apart: bool = False) -> "Loop":
        return Loop(m, driver, k, n_blocks, depth, apart)

    async def prefill(self, m, loop: "Loop", ids: list) -> None:
        await prefill(m, loop, ids[:-1])
        m.dev.write_buffer(m.act["tokens"], 0, np.array([ids[-1]], np.uint32))

    def expected(self, m, loop: "Loop", computed: int) -> float:
        return declared(m.cfg, True)

    def tuning(self, m) -> dict:
        """The kernels' effective shapes (defaults for this adapter plus any overrides), for the results."""
        import dataclasses
        return dataclasses.asdict(m.fused_tuning)

    def expected_prefill(self, m) -> float:
        return declared(m.cfg, False)


async def generate(lab, m, prompt_ids: list, max_new: int, driver: str = "python", on_token=None,
                   logits_out=None, k=None, ramp=None, depth=None) -> dict:
    """Greedy generation with the GPU-resident loop; same result keys as app.llm.generate.generate."""
    return await run(lab, m, prompt_ids, max_new, driver, on_token, k, FusedLoop(), ramp, depth)


async def run(lab, m, prompt_ids: list, max_new: int, driver, on_token, k, how, ramp=None, depth=None) -> dict:
    """The block loop shared by gpu_loop and resident: prefill, then blocks of ≤ k tokens, `depth` in flight
    (URL parameter depth, DEPTH by default)."""
    from .generate import after_first, check_request
    k = parse_k(lab.params.get("k") if k is None else k)
    check_request(m, prompt_ids, max_new)
    await how.prepare(m)
    ramp = parse_ramp(lab.params.get("ramp") if ramp is None else ramp)
    lengths = decode_lengths(max_new, k, ramp)
    depth = parse_depth(lab.params.get("depth") if depth is None else depth)
    apart, encode_ahead = OPTIONS["copy_apart"], OPTIONS["encode_ahead"]
    loop = how.loop(m, driver, k, len(lengths), depth, apart)
    decoder, pieces, out = m.tokenizer.stream_decoder(skip_special=True), [], []
    stopped, pending, t_first, n_first, read_at, sent_at = "max_new_tokens", [], None, 0, [], []
    try:
        t0 = _now()
        await how.prefill(m, loop, prompt_ids)
        pre_dispatches, pre_submits = loop.dispatches, loop.submits
        pos, nxt = len(prompt_ids) - 1, 0
        ahead = loop.encode_block(pos, lengths[0]) if encode_ahead and lengths else None   # while the GPU runs
        await loop.wait(m.dev.queue.onSubmittedWorkDone(), True)    # decode timing starts with the GPU idle
        m.dev.raise_if_lost()
        t_dec = _now()
        while pending or nxt < len(lengths):
            while nxt < len(lengths) and len(pending) < depth:
                pending.append(loop.submit_block(ahead or loop.encode_block(pos, lengths[nxt])))
                ahead = None
                sent_at.append(round(_now() - t_dec, 3))
                pos, nxt = pos + lengths[nxt], nxt + 1
            block = pending.pop(0)
            last = nxt >= len(lengths) and not pending        # nothing else is coming
            # poke (poke_us) for the last block and for the first, whose readback is the time to the first token
            got, stop = truncate(await loop.read(block, last or t_first is None), max_new - len(out),
                                 m.cfg.eos_id)
            t_last = _now()
            if t_first is None:
                t_first, n_first = t_last, len(got)
            read_at.append(round(t_last - t_dec, 3))
            for t in got:
                out.append(t)
                piece = decoder.feed(t)
                pieces.append(piece)
                if on_token is not None:
                    on_token(t, piece)
            if stop or lab.cancel_requested:
                stopped = "cancelled" if lab.cancel_requested and not stop else \
                    ("eos" if got and got[-1] == m.cfg.eos_id else "max_new_tokens")
                for p in pending:                     # blocks in flight: finish, discard (timed like the rest)
                    await loop.read(p)
                    read_at.append(round(_now() - t_dec, 3))
                pending = []
                break
        pieces.append(decoder.flush())
        gpu_ms = await loop.gpu_ms()
    finally:
        loop.destroy()
    n, computed = len(out), max(loop.computed, 1)
    dec_ms = t_last - t_dec
    return {
        "prompt_tokens": len(prompt_ids), "generated_token_ids": out, "text": "".join(pieces), "stopped": stopped,
        "ttft_ms": round(t_first - t0, 3),
        "decode_tok_per_s": round(n * 1000 / dec_ms, 3) if n and dec_ms > 0 else None,
        "decode_ms_per_token": round(dec_ms / n, 3) if n else None,
        "decode_after_first_tok_per_s": after_first(n - n_first, t_last - t_first),
        "dispatches_per_token": (loop.dispatches - pre_dispatches) / computed,
        "expected_dispatches_per_token": how.expected(m, loop, computed),
        "prefill_dispatches_per_token": pre_dispatches / (len(prompt_ids) - 1) if len(prompt_ids) > 1 else None,
        "expected_prefill_dispatches_per_token": how.expected_prefill(m),
        "submits_per_token": (loop.submits - pre_submits) / computed,
        "readbacks_per_token": loop.readbacks / computed,
        "gpu_ms_per_token": round(sum(gpu_ms) / computed, 4) if gpu_ms else loop.untimed,
        "gpu_timing": ("timestampWrites around each block's single pass, divided by its tokens" if gpu_ms else
                       "off (gpu_timing=0): no timestamps written" if loop.untimed == UNTIMED else
                       "this adapter has no timestamp-query"),
        "plan": how.name, "mode": "one_pass", "driver": driver, "k": k, "ramp": ramp, "depth": depth,
        "copy_apart": apart, "encode_ahead": encode_ahead, "poke_us": loop.poke_us, "pokes": loop.pokes,
        "poke_with": loop.poke_with if loop.poke_us else None,
        "tuning": how.tuning(m),
        "tokens_computed": loop.computed, "wasted_tokens": loop.computed - n, "blocks": loop.blocks,
        "block_lengths": lengths[:loop.blocks], "block_read_ms": read_at,
        "block_gpu_ms": [round(g, 4) for g in gpu_ms] if gpu_ms else loop.untimed,
        "block_sent_ms": sent_at,
        "block_gpu_gap_ms": [round(g, 4) for g in loop.gpu_gaps] if gpu_ms else loop.untimed,
        "wall_s": round((_now() - t0) / 1000, 3),
    }
