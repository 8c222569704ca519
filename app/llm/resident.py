"""The `resident` plan: all per-token state on the GPU, 2 dispatches per layer, dispatch-only encoding.

Where the time went in gpu_loop (results/2026-12-02-nvidia-h200-final, profile=1): on an H200 the fused
plan's 123 dependent dispatches cost 1.3 ms of GPU time per token, because every dependent dispatch
pays ~5 µs of barrier and launch before it does anything, and the attention block (one workgroup per
head, rows one subgroup round after another) took 31 µs per layer.  On the CPU each dispatch cost
3 encoder calls (setBindGroup, setPipeline, dispatchWorkgroups).  This plan attacks all three:

  * 2 dispatches per layer (wgsl/resident.wgsl): ATTN(l) = norm + Q|K|V + RoPE + KV write + attention +
    this head's slice of the output projection, FFN(l) = residual + norm + a block of gate/up/SiLU + that
    block's slice of the down projection.  A projection split by input columns gives partial sums that
    the NEXT dispatch adds (fixed order) while it builds its input, so no dispatch waits on another's
    reduction.  Per token: 2·n_layers + 1 (FINAL: the last residual) + 1 (head) = 62 for SmolLM2's 30
    layers, plus 1 `tail` per block (the argmax of the block's last token; every other token's argmax is
    folded into the next token's first dispatch).
  * split (ResidentTuning.split, the GPU default since results/2026-12-03-nvidia-h200-split): Q|K|V, RoPE and
    the KV write get a step of their own over all NWG workgroups, so the 9 attention workgroups no longer
    each recompute their group's K and V: 3 steps per layer, 92 dispatches per token, 5% less GPU time.
  * Dispatch-only encoding: a GPU step counter (each workgroup atomically adds 1; step = count / NWG)
    tells a `step` dispatch which layer and phase it is, so all 61 are the same call with the same bind
    group: one setBindGroup per pass, setPipeline only when switching to/from the head, and otherwise
    just dispatchWorkgroups(NWG) (app.plan Step.keep_state).
  * acc (ResidentTuning.acc): the residual stream's sums as exact fixed-point integers (two u32 words per
    element) that every contributing workgroup atomically adds into, instead of partial vectors that
    every workgroup of the next step gathers (NWG × d_model floats per workgroup after the FFN).  Integer
    addition is associative, so the result is still independent of scheduling.
  * grid (ResidentTuning.grid): step s of a token is dispatched with NWG + s workgroups (the extra ones
    return at once) and the position is kept in the state header, so a step knows its layer, and issues
    its weight loads, without first waiting for the counter's atomic round trip.  Still dispatch-only
    encoding: only the workgroup count of the calls differs.
  * wo_parts (ResidentTuning.wo_parts): the ATTN step runs wo_parts workgroups per head instead of one; each
    computes the head's attention and adds its share of the rows of the head's output-projection slice, so
    heads × wo_parts of the NWG workgroups work instead of heads (90 of 96 at fb 16; 45 of 48 at fb 32).
  * sga (ResidentTuning.sga): the attention without workgroup barriers in its loop: groups of subgroup lanes
    each keep a running max, sum and P·V over their positions (online softmax) and merge at the end.
  * Matvec work items are (row, block pair): every weight load of a dispatch is issued at once instead
    of in rounds of rows, and rmsnorm's scale is applied after the dot products.
  * Blocks of up to K tokens per submit (ramping up to K, 4 in flight by default), one readback per block:
    app.llm.gpu_loop.run.

The counter starts at 0 for position 0 of each generation (the CPU writes the state header and the
prompt once); tokens[pos] is the prompt for prompt positions, else the argmax the step computed.
Pure parts (CPython): dispatch_count, expected_dispatches, ResidentTuning, layout_constants, supported_why.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from app.adapter import is_cpu

from . import gpu_loop
from .gpu_loop import Loop, block_lengths, decode_lengths

KERNEL = "resident.wgsl"
STATE_HEADER = 4                 # u32 words before the accumulators and tokens: ctr, prompt_len, ctx, pos
OVERRIDES: dict = {}             # ResidentTuning fields to override (URL parameter resident_tuning)


def steps_per_token(n_layers: int, split: int = 0) -> int:
    """2 steps per layer (3 with split: Q|K|V in its own step) and FINAL."""
    return (3 if split else 2) * n_layers + 1


def step_kind(step: int, n_layers: int, split: int = 0) -> str:
    """What step `step` of a token does (as the kernel decodes its counter): qkv, attn, ffn or final."""
    per = 3 if split else 2
    if step == per * n_layers:
        return "final"
    return (("qkv", "attn", "ffn") if split else ("attn", "ffn"))[step % per]


def step_dispatches(n_layers: int, logits: bool, split: int = 0, fold: int = 0) -> int:
    """Step dispatches per token: all steps, less FINAL when fold is on and a head follows (the head then
    does FINAL's work)."""
    return steps_per_token(n_layers, split) - (fold if logits else 0)


def dispatch_count(n_layers: int, logits: bool = True, split: int = 0, fold: int = 0, persist: int = 0) -> int:
    """Dispatches per token, without the per-block tail: the step dispatches, plus the head when logits are
    needed (persist: one, steps and head together)."""
    if persist:
        return 1
    return step_dispatches(n_layers, logits, split, fold) + (1 if logits else 0)


def expected_dispatches(n_layers: int, tokens: int, blocks: int, split: int = 0, fold: int = 0,
                        persist: int = 0) -> float:
    """Declared dispatches per decoded token of a run: the per-token ones plus one tail per block."""
    return (dispatch_count(n_layers, True, split, fold, persist) * tokens + blocks) / max(tokens, 1)


def barrier_count(n_layers: int, split: int, ctx: int, nwg: int) -> int:
    """persist: the grid barrier counter's value after the last position of a `ctx` context (state_init sets it
    to 0; every step of every position adds nwg); the kernel needs it under 2^31 (its failure bit)."""
    return ctx * (3 if split else 2) * n_layers * nwg


@dataclass(frozen=True)
class ResidentTuning:
    """wg: invocations per workgroup; fb: FFN rows per FFN workgroup (NWG = ffn / fb workgroups per step; 8 or
    16 give each workgroup part of a Q4_1 block of the down projection's columns);
    head_rows: output rows per head workgroup; head_wg: the head's workgroup size (0: wg); skip: the kernel's
    ablation bitmask (timing runs only: the tokens are then meaningless, and the run is labelled with it);
    split: 1 puts Q|K|V (+ RoPE, KV write) in a step of its own over all NWG workgroups, 3 steps per layer;
    acc: 1 sums the residual stream in exact fixed-point atomics (2 words per element) instead of leaving
    partial vectors that every workgroup of the next step gathers (2: the high word rounds v · 16 and the low
    word is a signed remainder, so that the many small terms add one word instead of two); grid: 1 tells a step dispatch its step by
    its workgroup count (NWG + step; the extra workgroups return at once) instead of the atomic counter, so
    its weight loads need no round trip first; kv_pre (0..8): the positions per attention invocation whose K
    and V are loaded at dispatch start (the rest load inside the attention loop, a round trip per round);
    wo_parts: ATTN workgroups per head, each computing the head's attention and 1/wo_parts of the rows of its
    output-projection slice (heads × wo_parts ≤ NWG); sga: 1 computes the attention with a running max and
    sum per group of sgl subgroup lanes (online softmax, no workgroup barrier until the groups merge)
    instead of in chunks of wg positions with barriers between scores, softmax and P·V; sgl: lanes per
    position for sga (0: head_dim / 4 or the adapter's smallest subgroup, whichever is smaller); wv: 1 loads
    the layer matrices 8 bytes at a time (every pair of Q4_1 blocks starts on an even word; prepare checks);
    touch (bitmask, 0..15): what a step also loads, one word per 32-byte sector, so that the next step's loads
    hit the L2 cache (1: ATTN(l) FFN(l)'s weights, 2: FFN(l) Q|K|V(l + 1)'s, 4: QKV(l) layer l's K/V cache,
    8: FFN(l) Wo(l + 1) too); the results do not change.  rd: 1 reads an accumulator with every invocation
    loading at most ceil(2·d_model / wg) of its words into workgroup memory first, instead of d_model / 4
    invocations loading 8 atomic words each.  fold: 1 (with acc, grid and an even layer count) drops FINAL
    from decode: the head reads the last residual from its accumulator and advances the position itself, one
    dispatch a token less.  hpre: 1 has every head invocation load its first item's embedding words before it
    reads the residual.  dn (bitmask, 0..3): 1 sums rmsnorm's Σ r² across subgroups after the matvec's barrier
    (the scale is applied after the dot products) instead of with two barriers of its own before the matvec, same
    bits; 2 computes the Q4_1 block sums by subgroup shuffles in the residual loop, without a pass and barrier
    of their own (where subgroups are ≥ 8 wide; the order of that sum changes).  cm (bitmask, 0..7; 1 on GPUs): the plan
    binds its own copy of the layer matrices with every layer's down (1) and output (2) projection column-major
    (wgsl/repack_cm.wgsl, made once in prepare; as much GPU memory again as the matrices), so that neighbouring
    invocations of those slices load neighbouring blocks instead of blocks a row apart; 4: in that copy q|k|v and
    gate|up word-interleaved in chunks of 32 items, so that a warp's j-th words are one 128-byte line.  hq: 1 binds
    the plan's copy of the tied embedding (wgsl/repack_head.wgsl, made once in prepare; 32 MB for SmolLM2), every
    head item's quants unshifted and its scales as f32, word-interleaved in chunks of 32 items, so that the head's
    loads are whole 128-byte lines instead of 17 words 68 bytes apart per invocation; same values, same sums.
    persist (0..3): 1 (with split, acc and grid) runs a whole token in ONE dispatch (entry `persist`): its NWG
    workgroups step through every layer with a grid barrier on an atomic counter between steps, then compute the
    head.  That needs all NWG workgroups resident at once, which WebGPU does not promise; where they are not, the
    barrier gives up after a bounded number of polls and the run fails with a clear error instead of hanging (on
    SwiftShader, for one).  Cross-workgroup data within the dispatch moves only through returning atomics (see
    wgsl/resident.wgsl, gsync).  2: also loads each step's first weight items and norm weights (and the head's first
    item) before the previous step's barrier, so that they arrive while it waits; 3: the ATTN step's first K/V items
    too.  Off by default.
    GPUs: split, acc, grid and sga on, kv_pre 4, touch 4, dn 3, cm 1, 128 head rows, fb 16, as many workgroups per head as fit (10 for SmolLM2),
    512 invocations (the fastest on the H200; else the largest that fits).
    CPU adapters: 64, and the knobs off."""
    wg: int = 64
    fb: int = 64
    head_rows: int = 64
    head_wg: int = 0
    skip: int = 0
    split: int = 0
    acc: int = 0
    grid: int = 0
    kv_pre: int = 2
    wo_parts: int = 1
    sga: int = 0
    sgl: int = 0
    wv: int = 0
    touch: int = 0
    rd: int = 0
    fold: int = 0
    hpre: int = 0
    dn: int = 0
    cm: int = 0
    hq: int = 0
    persist: int = 0
    ZERO_OK = ("kv_pre",)        # fields that may be 0 although their default is not (amortize._overrides)

    @classmethod
    def for_adapter(cls, info: dict, limits: dict | None, cfg) -> "ResidentTuning":
        if is_cpu(info):
            return cls()
        limits = limits or {}
        cap = int(limits.get("maxComputeInvocationsPerWorkgroup") or 256)
        mem = int(limits.get("maxComputeWorkgroupStorageSize") or 16384)
        for wg in (512, 1024, 256, 128, 64):
            # 48 FFN workgroups: 1.40 vs 1.54 GPU ms/token with 24; split: 0.86 vs 0.91; acc + grid: 0.81 vs
            # 0.88; then wg 512: 0.80 (1024: 0.81, 256: 0.91) (H200 sweeps, results/2026-12-02-nvidia-h200-resident,
            # results/2026-12-03-nvidia-h200-split, results/2026-12-03-nvidia-h200-acc-grid); kv_pre 4: 0.782
            # vs 0.791 with 2 and 0.806 with 8 (results/2026-12-03-nvidia-h200-kv-pre); sga and 5 workgroups
            # per head: 0.737 vs 0.792 (sga alone 0.777, wo_parts 5 alone 0.741; results/2026-12-03-nvidia-h200-sga);
            # fb 16 (96 workgroups, 10 per head): 0.719 vs 0.737; at wg 256 fb 8 0.827 vs fb 16 0.761 (…-fb16);
            # touch 4 (the Q|K|V step loads the layer's K/V cache for the ATTN step): 0.6957–0.6958 vs
            # 0.6986–0.6998 in 3 calls; touch 1, 2, 3, 7, 15 (weights) 0.706–0.722, slower (…-touch);
            # dn 3: 0.6713, 0.6700, 0.6714 vs 0.6801, 0.6799, 0.6798 (dn 1: 0.678), again 0.673–0.675 vs 0.682–0.684
            # in two more calls, same tokens (results/2026-12-05-nvidia-h200-dn); on an H100
            # (results/2026-12-05-nvidia-h100-cm-hq): cm 3 (down and output projections column-major) 0.6837-0.6845
            # vs cm 0 0.6915-0.6924 in 3 rounds, cm 1 (down only) 0.6809-0.6822, cm 2 (output only) 0.6933-0.6946
            # (cm 4: 0.690; hq: 0.691); cm 1 with 128 head rows 0.6787-0.679 vs cm 3 0.6835-0.6843 in 3 rounds
            # re-checked on these defaults (results/2026-12-06-nvidia-h100-retune, H100): 0.6835-0.6847; kv_pre 2
            # and fold 1 the same, head_rows 256 0.686, hpre 1 0.689, kv_pre 6 0.691, touch 0 0.694, fb 32 0.696,
            # rd 1 0.701, wg 256 0.707, split 0 0.719, wg 1024 0.778
            for sga in (1, 0):                  # sga merges one head_dim per subgroup: more memory when narrow
                t = cls(wg=wg, fb=16, split=1, acc=1, grid=1, kv_pre=4, sga=sga, touch=4, dn=3, cm=1, head_rows=128)
                t = dataclasses.replace(t, wo_parts=t.max_wo_parts(cfg))
                if wg <= cap and t.shared_bytes(cfg, min_subgroup(info)) <= mem:
                    return t
        return cls()

    def max_wo_parts(self, cfg) -> int:
        """The most ATTN workgroups per head that the step's NWG workgroups allow, every part with rows."""
        p = max(1, self.nwg(cfg) // cfg.n_heads)
        while p > 1 and not rows_for_every_part(cfg.d_model, p):
            p -= 1
        return p

    def prod(self, cfg, sg_min: int = 4) -> int:
        """Floats of the kernel's `prod`: every matvec's items (Q|K|V and gate|up: rows × block pairs; the
        Wo and Wdown slices: rows × blocks; the head: rows × pairs), the P·V partials (4 per invocation; sga:
        head_dim per subgroup of ≥ sg_min lanes) and the gathered partial sums (≤ max(wg, d_model / 4) vec4s)
        and a chunk's scores (head_dim / 16 parts per position on 4-wide subgroups)."""
        pairs = cfg.d_model // 64
        return max(4 * self.wg, cfg.d_model, self.wg * cfg.head_dim // 16, 3 * cfg.head_dim * pairs,
                   2 * self.fb * pairs, self.head_rows * pairs, cfg.d_model * cfg.head_dim // 32,
                   cfg.d_model * self.fb // 32, self.wg // sg_min * cfg.head_dim if self.sga else 0)

    def shared_bytes(self, cfg, sg_min: int = 4) -> int:
        """Workgroup memory of wgsl/resident.wgsl: xs and vec_b (with their padding), bs, prod, vec_a, q4, red,
        redu, red_n, 4 broadcast words, w_dep, accw."""
        return 4 * (cfg.d_model + cfg.d_model // 16 + cfg.d_model // 32 + self.prod(cfg, sg_min) + 4 * cfg.head_dim
                    + self.wg + self.wg // 32 + 3 * (self.wg // 4) + 5 + self.accw(cfg))

    def accw(self, cfg) -> int:
        """Words of the kernel's accw (rd: one accumulator, hi and lo words)."""
        return 2 * cfg.d_model if self.rd else 1

    def lanes(self, cfg, sg_min: int = 4) -> int:
        """sga: lanes per position (SGL)."""
        return self.sgl or min(cfg.head_dim // 4, sg_min)

    def nwg(self, cfg) -> int:
        return cfg.ffn // self.fb

    def head_groups(self, cfg) -> int:
        return -(-cfg.vocab // self.head_rows)

    def head_size(self) -> int:
        return self.head_wg or self.wg

    def check(self, cfg, sg_min: int = 4) -> None:
        """ValueError naming the first shape this tuning cannot serve (sg_min: the adapter's smallest subgroup)."""
        if self.fb < 8 or self.head_rows < 1 or not 0 <= self.skip < 1024 or self.wo_parts < 1 or \
                any(v not in (0, 1) for v in (self.split, self.grid, self.sga, self.wv, self.rd, self.fold, self.hpre,
                                              self.hq)) or \
                self.acc not in (0, 1, 2) or \
                not 0 <= self.kv_pre <= 8 or self.sgl < 0 or not 0 <= self.touch < 16 or not 0 <= self.dn < 4 or \
                not 0 <= self.cm < 8 or not 0 <= self.persist <= 3:
            raise ValueError(f"resident: bad tuning {self} (fb ≥ 8, head_rows ≥ 1, skip < 1024, split, grid, "
                             "sga, wv, rd, fold, hpre and hq 0 or 1, acc 0..2, kv_pre 0..8, wo_parts ≥ 1, sgl ≥ 0, touch "
                             "0..15, dn 0..3, cm 0..7, persist 0..3)")
        if self.fold and (not self.acc or not self.grid or cfg.n_layers % 2):
            raise ValueError(f"resident: fold=1 needs acc and grid on and an even number of layers "
                             f"(acc={self.acc}, grid={self.grid}, {cfg.n_layers} layers)")
        if self.persist and (not self.split or not self.acc or not self.grid or self.fold or self.hpre or
                             self.head_size() != self.wg):
            raise ValueError(f"resident: persist=1 needs split, acc and grid on, fold and hpre off and the head at the "
                             f"steps' workgroup size (split={self.split}, acc={self.acc}, grid={self.grid}, "
                             f"fold={self.fold}, hpre={self.hpre}, head_wg={self.head_wg})")
        lanes, qd = self.lanes(cfg, sg_min), cfg.head_dim // 4
        if self.sga and (lanes & (lanes - 1) or lanes > min(qd, sg_min) or qd // lanes > 8):
            raise ValueError(f"resident: sgl={lanes} must be a power of two ≤ head_dim / 4 = {qd} and ≤ the "
                             f"adapter's smallest subgroup ({sg_min}), with head_dim / 4 / sgl ≤ 8")
        pairs = cfg.d_model // 64
        if self.cm & 4 and ((cfg.n_heads + 2 * cfg.n_kv_heads) * cfg.head_dim * pairs % 32 or 2 * cfg.ffn * pairs % 32):
            raise ValueError("resident: cm bit 4 interleaves q|k|v and gate|up in chunks of 32 items (rows × d_model/64 "
                             "pairs), and this model's counts are not multiples of 32")
        if cfg.n_heads * self.wo_parts > self.nwg(cfg) or not rows_for_every_part(cfg.d_model, self.wo_parts):
            raise ValueError(f"resident: wo_parts={self.wo_parts} needs {cfg.n_heads * self.wo_parts} workgroups "
                             f"(there are {self.nwg(cfg)}) and every part some of the {cfg.d_model} rows")
        if self.head_size() % 64 or self.head_size() > self.wg:
            raise ValueError(f"resident: head_wg {self.head_wg} must be a multiple of 64 and ≤ wg")
        if self.wg % 64 or self.wg < cfg.head_dim:
            raise ValueError(f"resident: workgroup size {self.wg} must be a multiple of 64 and ≥ head_dim")
        if (self.fb % 32 and self.fb not in (8, 16)) or cfg.ffn % self.fb or self.fb > self.wg:
            raise ValueError(f"resident: fb={self.fb} must be 8, 16 or a multiple of 32, dividing ffn={cfg.ffn}, "
                             "and ≤ wg")
        if self.nwg(cfg) < cfg.n_heads:
            raise ValueError(f"resident: ffn / fb = {self.nwg(cfg)} workgroups, fewer than the {cfg.n_heads} heads")
        if self.acc and self.nwg(cfg) + 1 > 255:
            raise ValueError(f"resident: acc sums the low words of ≤ 255 contributors, not {self.nwg(cfg) + 1}")
        qd = cfg.head_dim // 4
        if cfg.d_model % 64 or cfg.head_dim % 32 or qd & (qd - 1) or cfg.n_heads % cfg.n_kv_heads:
            raise ValueError("resident: needs d_model % 64 == 0, head_dim a power of two ≥ 32 and whole query groups")


def layout_constants(refs: dict, cfg) -> dict:
    """Word offsets the kernel needs, from the loader's layout: every layer's matrices in the "layers"
    buffer at one stride, norms in "norms" at one stride, a tied Q8_0 head.  ValueError otherwise."""
    def word(name):
        r = refs[name]
        if r.offset % 4:
            raise ValueError(f"resident: {name} is not word aligned")
        return r.offset // 4

    def blk(l, p):
        return f"blk.{l}.{p}.weight"
    if "output.weight" in refs:
        raise ValueError("the resident plan needs the output head tied to token_embd (this model has its own)")
    mats = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
    if any(refs[blk(l, p)].buffer != "layers" for l in range(cfg.n_layers) for p in mats):
        raise ValueError("the resident plan needs every layer matrix in the one 'layers' buffer")
    base = word(blk(0, "attn_q"))
    stride = word(blk(1, "attn_q")) - base if cfg.n_layers > 1 else 0
    nbase = word(blk(0, "attn_norm"))
    nstride = word(blk(1, "attn_norm")) - nbase if cfg.n_layers > 1 else 0
    rel = {p: word(blk(0, p)) - base for p in mats}
    nrel = {p: word(blk(0, p)) - nbase for p in ("attn_norm", "ffn_norm")}
    for l in range(cfg.n_layers):
        for p in mats:
            if word(blk(l, p)) != base + l * stride + rel[p]:
                raise ValueError(f"resident: layer {l}'s {p} is not at the common layer stride")
        for p in nrel:
            if word(blk(l, p)) != nbase + l * nstride + nrel[p]:
                raise ValueError(f"resident: layer {l}'s {p} is not at the common norm stride")
    row = cfg.d_model // 32 * 5
    if rel["attn_k"] != cfg.n_heads * cfg.head_dim * row or \
            rel["attn_v"] != rel["attn_k"] + cfg.n_kv_heads * cfg.head_dim * row or \
            rel["ffn_up"] != rel["ffn_gate"] + cfg.ffn * row:
        raise ValueError("resident: q|k|v and gate|up must be back to back")
    if base or nbase:
        raise ValueError("resident: the first layer's q and attn_norm must start their buffers")
    return {"L_STRIDE": stride, "OFF_O": rel["attn_output"], "OFF_GATE": rel["ffn_gate"],
            "OFF_DOWN": rel["ffn_down"], "N_STRIDE": nstride, "NOFF_FFN": nrel["ffn_norm"],
            "NOFF_OUT": word("output_norm.weight")}


def rows_for_every_part(rows: int, parts: int) -> bool:
    """Whether `parts` slices of ceil(rows / parts) rows (the kernel's WO_PARTS split) all get some."""
    return (parts - 1) * -(-rows // parts) < rows


def min_subgroup(info: dict) -> int:
    """The adapter's smallest subgroup size (the kernel needs ≥ 4; 4 when the adapter does not say)."""
    return max(4, int(info.get("subgroupMinSize") or 4))


def supported_why(features, info: dict) -> str | None:
    """None when the kernel can run on this adapter, else the reason."""
    if "subgroups" not in features:
        return "the resident kernel reduces with subgroup operations and this adapter lacks 'subgroups'"
    if int(info.get("subgroupMinSize") or 4) < 4:
        return "the resident kernel needs subgroups at least 4 wide"
    return None


def state_words(cfg, t: ResidentTuning, ctx: int) -> int:
    """The state buffer: header, (acc) 2 accumulators × 2 slots × (hi, lo) × d_model, then ctx + 1 tokens."""
    return tokens_at(cfg, t) + ctx + 1


def tokens_at(cfg, t: ResidentTuning) -> int:
    """Word of tokens[0] in the state: after the header, the accumulators (whose addresses then need no ctx) and
    (persist) one staging word per row of the joined Q|K|V matrix."""
    return STATE_HEADER + (8 * cfg.d_model if t.acc else 0) + \
        ((cfg.n_heads + 2 * cfg.n_kv_heads) * cfg.head_dim if t.persist else 0)


FAIL_TOKEN = 0xFFFFFFFF          # persist: what the kernel writes for a token once a grid barrier gave up


def state_init(cfg, t: ResidentTuning, ctx: int, ids: list) -> np.ndarray:
    """What a generation starts from: counter and position 0, the prompt, zeroed accumulators."""
    w = np.zeros(state_words(cfg, t, ctx), np.uint32)
    w[1], w[2] = len(ids), ctx
    at = tokens_at(cfg, t)
    w[at:at + len(ids)] = ids
    return w


def grid(cfg, t: ResidentTuning, step: int) -> int:
    """Workgroups of step dispatch `step` of a token (grid: NWG + step, else NWG)."""
    return t.nwg(cfg) + (step if t.grid else 0)


def scratch_floats(cfg, t: ResidentTuning) -> int:
    """X | XM | XF | Q | PA | PF | HP (rounded up to a vec4) | one vec4 for the touch loads' kept result."""
    return (3 * cfg.d_model + cfg.n_heads * cfg.head_dim + cfg.n_heads * cfg.d_model + t.nwg(cfg) * cfg.d_model
            + 4 * -(-2 * t.head_groups(cfg) // 4) + 4)


# ------------------------------------------------------------------------------------------ browser
async def prepare(m) -> None:
    """Compile the three entries of wgsl/resident.wgsl and allocate the state and scratch buffers."""
    from app.gpu import COPY_DST, COPY_SRC, STORAGE, GPUError
    from .kernels import load_kernel
    c = m.cfg
    t = dataclasses.replace(ResidentTuning.for_adapter(m.dev.adapter_info, m.dev.limits, c), **OVERRIDES)
    why = supported_why(m.dev.features, m.dev.adapter_info)
    if why:
        raise GPUError(f"the resident plan is unsupported here: {why}")
    sg = min_subgroup(m.dev.adapter_info)
    try:
        t.check(c, sg)
        consts = layout_constants(m.refs, c)
        if t.wv and any(consts[k] % 2 for k in ("L_STRIDE", "OFF_O", "OFF_GATE", "OFF_DOWN")):
            raise ValueError("resident: wv=1 needs every layer matrix on an even word (8-byte loads)")
    except ValueError as e:
        raise GPUError(str(e)) from None
    if t.persist and barrier_count(c.n_layers, t.split, m.ctx, t.nwg(c)) >= 2 ** 31:
        raise GPUError(f"resident: persist=1 counts {barrier_count(c.n_layers, t.split, m.ctx, t.nwg(c))} barrier "
                       f"arrivals over a context of {m.ctx}, more than its counter holds (2^31); use a shorter context")
    if t.shared_bytes(c, sg) > int(m.dev.limits.get("maxComputeWorkgroupStorageSize") or 16384):
        raise GPUError(f"the resident plan is unsupported here: wg={t.wg} needs {t.shared_bytes(c, sg)} bytes of "
                       "workgroup memory, more than this device allows")
    if getattr(m, "resident_tuning", None) != t or getattr(m, "resident_sg", None) != sg or "r_step" not in m.kernels:
        for key in ("resident_state", "resident_scratch", "resident_layers", "resident_embd"):
            if key in m.act:
                m.act.pop(key).destroy()
                m.memory.pop(key, None)
        m.forget_plans()
        consts.update({"D": c.d_model, "HEADS": c.n_heads, "KV_HEADS": c.n_kv_heads, "HEAD_DIM": c.head_dim,
                       "ROPE_DIM": c.rope_dim, "FFN": c.ffn, "N_LAYERS": c.n_layers, "VOCAB": c.vocab,
                       "EPS": c.rms_eps, "NWG": t.nwg(c), "FB": t.fb, "WG": t.wg, "HEAD_ROWS": t.head_rows,
                       "HEAD_GROUPS": t.head_groups(c), "PROD": t.prod(c, sg), "SKIP": t.skip, "SPLIT": t.split,
                       "ACC": t.acc, "GRID": t.grid, "KV_PRE": t.kv_pre, "WO_PARTS": t.wo_parts, "SGA": t.sga,
                       "SGL": t.lanes(c, sg), "WV": t.wv, "TOUCH": t.touch, "RD": t.rd, "FOLD": t.fold, "HPRE": t.hpre,
                       "ACCW": t.accw(c), "DN": t.dn, "CM": t.cm, "HQ": t.hq, "PERSIST": t.persist})
        modules: dict = {}
        for entry in ("step", "head", "tail") + (("persist",) if t.persist else ()):
            own = {**consts, "WG": t.head_size()} if entry == "head" else consts
            m.kernels[f"r_{entry}"] = await load_kernel(m.dev, KERNEL, entry, own, f"resident {entry}", modules)
        m.resident_tuning, m.resident_sg = t, sg
    for key, size in (("resident_state", 4 * state_words(c, t, m.ctx)),
                      ("resident_scratch", 4 * scratch_floats(c, t))):
        if key in m.act and m.memory.get(key) != size:
            m.act.pop(key).destroy()
            m.forget_plans()
        if key not in m.act:
            m.act[key] = await m.dev.checked(f"creating the GPU buffer {key}", m.dev.create_buffer, size,
                                             STORAGE | COPY_SRC | COPY_DST, key)
            m.memory[key] = size
    if t.cm and "resident_layers" not in m.act:     # the layer matrices, some column-major / interleaved
        await _repack(m, "resident_layers", "repack_cm.wgsl", m.weights["layers"], int(m.weights["layers"].size), {
            "D": c.d_model, "HEADS": c.n_heads, "HEAD_DIM": c.head_dim, "FFN": c.ffn, "N_LAYERS": c.n_layers,
            "L_STRIDE": consts["L_STRIDE"], "OFF_O": consts["OFF_O"], "OFF_DOWN": consts["OFF_DOWN"], "CM": t.cm,
            "KV_HEADS": c.n_kv_heads, "OFF_GATE": consts["OFF_GATE"]})
    if t.hq and "resident_embd" not in m.act:       # the embedding, head items interleaved
        await _repack(m, "resident_embd", "repack_head.wgsl", m.weights["token_embd"], 4 * hq_words(c),
                      {"D": c.d_model, "VOCAB": c.vocab})


def hq_words(cfg) -> int:
    """Words of the hq copy of the embedding (wgsl/repack_head.wgsl): 18 per head item (row, pair of blocks), in
    whole chunks of 32 items."""
    return -(-cfg.vocab * (cfg.d_model // 64) // 32) * 32 * 18


async def _repack(m, key: str, file: str, src, size: int, consts: dict) -> None:
    """m.act[key]: a `size`-byte copy of the weight buffer `src` in another layout, made on the GPU once per
    tuning by wgsl/`file` (one invocation per u32 word of the copy)."""
    import js  # type: ignore
    from app.gpu import STORAGE
    from .kernels import load_kernel
    dst = await m.dev.checked(f"creating the GPU buffer {key}", m.dev.create_buffer, size, STORAGE, key)
    k = await load_kernel(m.dev, file, "main", consts, f"resident {file}")
    groups = -(-size // 4 // 64)
    x = min(groups, 65535)
    enc = m.dev.device.createCommandEncoder()
    p = enc.beginComputePass()
    p.setPipeline(k.pipeline)
    p.setBindGroup(0, k.bind(m.dev, [src, dst], f"resident {file}"))
    p.dispatchWorkgroups(x, -(-groups // x))
    p.end()
    m.dev.queue.submit(js.Array.of(enc.finish()))
    await m.dev.on_submitted_work_done()
    m.dev.raise_if_lost()
    m.act[key], m.memory[key] = dst, size


def _bind_group(m):
    a = m.act
    layers = a["resident_layers"] if m.resident_tuning.cm else m.weights["layers"]
    embd = a["resident_embd"] if m.resident_tuning.hq else m.weights["token_embd"]
    return m.group("r_step", f"resident@{m.ctx}", [
        a["resident_state"], layers, m.weights["norms"], embd, a["rope"],
        a["k_cache"], a["v_cache"], a["resident_scratch"]])


def block_plan(m, length: int, logits: bool, tail: bool):
    """`length` tokens: 2·n_layers + 1 step dispatches each (3·n_layers + 1 with split; fold: FINAL left out
    when there is a head), then the head (logits), then a tail.  persist: one dispatch per token instead."""
    from app.plan import Plan
    key = ("resident_block", length, logits, tail)
    if key in m._plans:
        return m._plans[key]
    c, t, P = m.cfg, m.resident_tuning, Plan()
    bg = [_bind_group(m)]
    step, head = m.kernels["r_step"].pipeline, m.kernels["r_head"].pipeline
    for i in range(length if t.persist else 0):     # the steps and the head in one dispatch (NWG + 1: the head)
        P.add(m.kernels["r_persist"].pipeline, bg, (t.nwg(c) + (1 if logits else 0),), None, f"r{i}.persist",
              keep_state=i > 0)
    for i in range(0 if t.persist else length):
        for s in range(step_dispatches(c.n_layers, logits, t.split, t.fold)):
            P.add(step, bg, (grid(c, t, s),), None, f"r{i}.{s}", keep_state=s > 0)
        if logits:
            P.add(head, bg, (t.head_groups(c),), None, f"r{i}.head")
    if tail:
        P.add(m.kernels["r_tail"].pipeline, bg, (1,), None, "r.tail")
    m._plans[key] = P
    return P


class ResidentLoop(Loop):
    """gpu_loop.Loop with this plan's blocks; tokens are read straight from the state buffer."""

    def block(self, pos: int, length: int):
        return block_plan(self.m, length, True, True)

    def copy_out(self, pos: int, length: int, st) -> list[tuple]:
        at = tokens_at(self.m.cfg, self.m.resident_tuning)
        return [(self.m.act["resident_state"], 4 * (at + pos + 1), st, 0, 4 * length)]

    async def read(self, pending, poke: bool = False) -> list[int]:
        out = await super().read(pending, poke)
        if FAIL_TOKEN in out:
            from app.gpu import Unsupported
            t = self.m.resident_tuning
            raise Unsupported(f"resident persist={t.persist} is unsupported here: a grid barrier gave up waiting, "
                              f"because this adapter did not run all {t.nwg(self.m.cfg)} workgroups of a dispatch at "
                              "once (WebGPU does not promise that); run without persist")
        return out


class Resident:
    name = "resident"

    async def prepare(self, m) -> None:
        await prepare(m)

    def loop(self, m, driver: str, k: int, n_blocks: int, depth: int = gpu_loop.DEPTH, apart: bool = False):
        return ResidentLoop(m, driver, k, n_blocks, depth, apart)

    async def prefill(self, m, loop, ids: list) -> None:
        """State header (counter 0) and the prompt, then positions 0..n-2 without the head."""
        m.dev.write_buffer(m.act["resident_state"], 0, state_init(m.cfg, m.resident_tuning, m.ctx, ids))
        for length in block_lengths(len(ids) - 1, loop.k):
            await loop.replay(block_plan(m, length, False, False))

    def tuning(self, m) -> dict:
        """The step kernel's effective tuning (this adapter's defaults plus any overrides), for the results."""
        return dataclasses.asdict(m.resident_tuning)

    def expected(self, m, loop, computed: int) -> float:
        t = m.resident_tuning
        return expected_dispatches(m.cfg.n_layers, computed, loop.blocks, t.split, t.fold, t.persist)

    def expected_prefill(self, m) -> float:
        t = m.resident_tuning
        return dispatch_count(m.cfg.n_layers, False, t.split, 0, t.persist)


def warm(m, prompt_len: int, max_new: int, k: int, ramp: bool = gpu_loop.RAMP) -> None:
    """Record and convert every block plan a run of this shape replays, before timing."""
    for length in set(decode_lengths(max_new, k, ramp)):
        block_plan(m, length, True, True).to_js()
    for length in set(block_lengths(prompt_len - 1, k)):
        block_plan(m, length, False, False).to_js()


async def generate(lab, m, prompt_ids: list, max_new: int, driver: str = "python", on_token=None,
                   logits_out=None, k=None, ramp=None, depth=None) -> dict:
    return await gpu_loop.run(lab, m, prompt_ids, max_new, driver, on_token, k, Resident(), ramp, depth)
