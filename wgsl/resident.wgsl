// resident.wgsl — the `resident` plan (app/llm/resident.py): a whole token in 2 dispatches per layer
// (+ 1 to finish the residual stream, + the head), and the CPU encodes nothing but dispatch calls.
//
// A step counter on the GPU says what each dispatch does, so every dispatch of a token is the SAME
// call, `dispatchWorkgroups(NWG)` of entry `step` with one bind group set once per pass:
//   every workgroup of a `step` dispatch first does  old = atomicAdd(&st.ctr, 1)
//   s   = old / NWG            (every dispatch has exactly NWG workgroups, and dispatches in a pass run
//                               one after another, so all workgroups of dispatch s see s·NWG ≤ old < (s+1)·NWG)
//   pos = s / SPT, ph = s % SPT   (SPT = 2·N_LAYERS + 1 steps per token; the counter starts at 0 for pos 0)
//   ph = 2l      ATTN(l)   workgroup h < HEADS, one query head:
//                  r = (l == 0) ? E[token] : XM + Σ_f PF[f]        (residual stream entering layer l;
//                  token = tokens[pos] for prompt positions, else argmax of the head's parts, written back)
//                  q_h, k_g, v_g = W_qkv · rmsnorm(r);  rope(q_h, k_g, pos);  K/V[l, pos, g] = k_g, v_g
//                  o_h = softmax(q_h·K[l, 0..pos, g] / √HEAD_DIM) · V[l, 0..pos, g]   (chunks of WG positions,
//                        running max and sum, so any context length works)
//                  PA[h] = Wo[:, h·HEAD_DIM …] · o_h          (this head's share of the output projection)
//                  workgroup 0 also writes X = r.
//   ph = 2l + 1  FFN(l)    workgroup f < NWG, intermediate rows f·FB … f·FB + FB − 1:
//                  m = X + Σ_h PA[h];  a = silu(Wgate·rmsnorm(m)) ∘ (Wup·rmsnorm(m))   (FB rows each)
//                  PF[f] = Wdown[:, f·FB …] · a                (this block's share of the down projection)
//                  workgroup 0 also writes XM = m.
//   ph = 2·N_LAYERS  FINAL  workgroup 0: XF = XM + Σ_f PF[f]   (the last residual, for the head)
// entry `head`: logits rows of workgroup w = E[rows]·rmsnorm(XF)·output_norm; HP[w] = (max, lowest index)
// entry `tail`: tokens[pos + 1] = argmax(HP) for the last token of a block (the next block's ATTN(0)
//               computes the same value itself).
// No dispatch reads what it writes: ATTN reads XM, PF, HP and writes X, PA; FFN reads X, PA and writes
// XM, PF; FINAL reads XM, PF and writes XF; head reads XF and writes HP.  K/V[pos] of this token come
// from workgroup memory, earlier positions from the cache, so no workgroup reads another's writes.
// With SPLIT, QKV reads XM, PF, HP and writes X, Q and K/V[pos]; ATTN reads Q and the cache and writes PA.
// Every partial is summed in a fixed order: the result does not depend on scheduling.
//
// Matrices are the GGUF bytes as stored.  Q4_1 blocks (W): 20 bytes = 5 u32 (f16 d | f16 m, then 16 bytes
// of nibbles: weight j < 16 = low nibble of byte j, j + 16 = high nibble; w = d·q + m).  Q8_0 (E): 34-byte
// blocks (f16 d, 32 × int8; w = d·q), read in pairs (68 bytes = 17 u32, word aligned since D % 64 = 0).
// A matvec work item is one row × two blocks (Q|K|V, gate|up) or one row × one block (the output and down
// projection slices); every invocation loads the weights of its first two items of each matvec into
// registers as soon as it knows the layer, so their memory latency overlaps the residual sums, the
// norm and the attention.  rmsnorm's scale is applied per row after the dot products.
//
// Bindings (group 0):
//   0  storage, read_write  State             st      { ctr (atomic), prompt_len, ctx, pos, words[]: (ACC) the
//                                                     accumulators (8·D), then tokens[ctx + 1] from tok0() }
//   1  storage, read        array<vec2<u32>>  W       (words) every layer's Q4_1 matrices: layer l at l·L_STRIDE words,
//                                                     q|k|v at 0, o at OFF_O, gate|up at OFF_GATE, down at OFF_DOWN
//                                                     (CM: the plan's copy, o and/or down column-major)
//   2  storage, read        array<vec4<f32>>  nw      norms: attn_norm(l) at l·N_STRIDE, ffn_norm(l) at
//                                                     l·N_STRIDE + NOFF_FFN, output_norm at NOFF_OUT
//   3  storage, read        array<u32>        E       token embedding = tied output head, Q8_0
//                                                     (HQ: the plan's copy, 18 words per item interleaved: e_word)
//   4  storage, read        array<vec2<f32>>  rope    ctx · ROPE_DIM/2 (cos, sin)
//   5  storage, read_write  array<vec4<f32>>  kc      N_LAYERS · ctx · KV_HEADS·HEAD_DIM / 4
//   6  storage, read_write  array<vec4<f32>>  vc      N_LAYERS · ctx · KV_HEADS·HEAD_DIM / 4
//   7  storage, read_write  array<vec4<f32>>  sc      X | XM | XF (D each) | Q (HEADS·HEAD_DIM) | PA (HEADS·D) | PF (NWG·D) |
//                                                     HP (2·HEAD_GROUPS) | TOUCH (one vec4, written, never read)
//                                                     (floats; every region starts on a vec4)
// SPLIT = 1 (ResidentTuning.split): 3 steps per layer, QKV(l) (workgroup w: rows w·QR … of Q|K|V, RoPE, q to
//   Q, k/v to the cache; the residual as ATTN builds it) before ATTN(l), which then starts from q and the cache.
// ACC = 1 (ResidentTuning.acc): instead of PA/PF partial vectors (and X, XM), contributors atomically add
//   exact fixed-point values into accumulators kept ahead of the tokens in the state (see acc_add).
// GRID = 1 (ResidentTuning.grid): a step dispatch has NWG + s workgroups for step s of a token (the rest
//   return at once); the position is st.pos, which FINAL's workgroup 0 advances; the counter is unused.
// WO_PARTS (ResidentTuning.wo_parts): HEADS · WO_PARTS ATTN workgroups; the WO_PARTS of one head each compute
//   its attention and add their share of the rows of its output-projection slice.
// SGA = 1 (ResidentTuning.sga): the attention of attn_sg (a running max and sum per group of SGL subgroup
//   lanes, no workgroup barrier until the groups merge) instead of attn_old (chunks of WG positions).
// RD = 1 (ResidentTuning.rd): a step reads an accumulator with every invocation loading ≤ ceil(2·D / WG) of its words
//   into workgroup memory (accw) first, instead of D / 4 invocations loading 8 atomic words each.
// FOLD = 1 (ResidentTuning.fold; needs ACC, GRID and an even N_LAYERS): decode blocks dispatch no FINAL step; the
//   head reads the last layer's RF accumulator itself and its workgroup 0 advances st.pos (prefill keeps FINAL).
// HPRE = 1 (ResidentTuning.hpre): every head invocation loads its first item's 17 embedding words before it reads
//   the residual, so their latency overlaps the read and the norm.
// DN (ResidentTuning.dn), a bitmask: 1: rmsnorm's Σ r² leaves one partial per subgroup in red_n, published by the
//   barrier that publishes xs, and the scale is summed after the matvec's barrier (it is applied per row after the
//   dot products anyway) instead of by wg_sum's two barriers before the matvec.  Same sums, same order: the same
//   bits.  2: the Q4_1 block sums bs by subgroup shuffles in the residual loop (vec4 i of xs on lane i % 8 of a
//   subgroup), so no block_sums pass and no barrier of its own (needs subgroups ≥ 8 wide dividing WG, D/4 ≤ WG;
//   else block_sums as before).  A different summation order for bs: rounding may differ.
// CM (ResidentTuning.cm), a bitmask: binding 1 is the plan's copy of the layer matrices (wgsl/repack_cm.wgsl) with
//   every layer's down (1) and output (2) projection column-major, and those slices load through short_addr;
//   4: q|k|v and gate|up word-interleaved in 32-item chunks, loaded through load10_in.
// HQ = 1 (ResidentTuning.hq): binding 3 is the plan's copy of the embedding (wgsl/repack_head.wgsl): each head item
//   (row, pair of blocks) 16 words of unshifted quants and 2 f32 scales, word-interleaved in chunks of 32 items,
//   so that the head's loads are whole lines; the same values and the same sums.
// Dispatch: step (NWG, 1, 1) (GRID: NWG + s); head (HEAD_GROUPS, 1, 1); tail (1, 1, 1).
// Overrides: model shape (D multiple of 64, HEADS, KV_HEADS, HEAD_DIM multiple of 32, ROPE_DIM, FFN, N_LAYERS,
//   VOCAB, EPS), NWG = FFN / FB (≥ HEADS), FB (8, 16 or a multiple of 32), WG (multiple of 64, ≥ HEAD_DIM),
//   HEAD_ROWS (rows per head workgroup), HEAD_GROUPS = ceil(VOCAB / HEAD_ROWS), PROD (see prod), layout offsets
//   (u32 / f32 words).  Needs subgroups at least 4 wide.
enable subgroups;

struct State {
    ctr: atomic<u32>,
    prompt_len: u32,
    ctx: u32,
    pos: u32,                                                // GRID: tokens computed (FINAL's workgroup 0 adds 1)
    tokens: array<atomic<u32>>,                              // (ACC) the accumulators, then ctx + 1 tokens (tok0)
}

override D: u32;
override HEADS: u32;
override KV_HEADS: u32;
override HEAD_DIM: u32;
override ROPE_DIM: u32;
override FFN: u32;
override N_LAYERS: u32;
override VOCAB: u32;
override EPS: f32 = 1e-5;
override NWG: u32;
override FB: u32;
override WG: u32 = 64u;
override HEAD_ROWS: u32 = 64u;
override HEAD_GROUPS: u32;
override PROD: u32;                                          // ≥ every use of prod (see ResidentTuning.prod)
override L_STRIDE: u32;
override OFF_O: u32;
override OFF_GATE: u32;
override OFF_DOWN: u32;
override N_STRIDE: u32;
override NOFF_FFN: u32;
override NOFF_OUT: u32;
override SPLIT: u32 = 0u;                                    // 1: Q|K|V in a step of its own (3 per layer)
override SKIP: u32 = 0u;                                     // ablation bitmask (timing only, see skip())
override ACC: u32 = 0u;                                      // 1, 2: residual sums in fixed-point atomics (acc_add)
override KV_PRE: u32 = 2u;                                   // positions per invocation whose K, V load first (≤ 8)
override GRID: u32 = 0u;                                     // 1: the step is the dispatch's workgroup count − NWG
override WO_PARTS: u32 = 1u;                                 // ATTN workgroups per head (output projection rows split)
override SGA: u32 = 0u;                                      // 1: the attention of attn_sg (no barriers in its loop)
override SGL: u32 = 4u;                                      // SGA: lanes per position, ≤ the smallest subgroup, ≤ HEAD_DIM/4
override WV: u32 = 0u;                                       // 1: weights loaded 8 bytes at a time (load10)
override TOUCH: u32 = 0u;                                    // bitmask: what a step touches for the next (see touch_w)
override RD: u32 = 0u;                                       // 1: accumulator reads spread over the workgroup (acc_fetch)
override FOLD: u32 = 0u;                                     // 1: the head reads the last residual itself (no FINAL)
override HPRE: u32 = 0u;                                     // 1: the head loads its first item's weights first
override ACCW: u32 = 1u;                                     // words of accw: 2·D with RD, else 1
override DN: u32 = 0u;
override CM: u32 = 0u;                                       // bitmask: W's down (1) / output (2) projections column-major,
                                                             // 4: q|k|v and gate|up word-interleaved (load10_in)
override HQ: u32 = 0u;                                       // 1: E is the plan's copy, 18 words per item interleaved (e_word)
override PERSIST: u32 = 0u;                                  // 1: entry `persist`, a whole token per dispatch (gsync)
override SPIN: u32 = 2097152u;                               // PERSIST: polls of the grid barrier before it gives up

@group(0) @binding(0) var<storage, read_write> st: State;
@group(0) @binding(1) var<storage, read> W: array<vec2<u32>>;          // word i = W[i / 2][i % 2]
@group(0) @binding(2) var<storage, read> nw: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> E: array<u32>;
@group(0) @binding(4) var<storage, read> rope: array<vec2<f32>>;
@group(0) @binding(5) var<storage, read_write> kc: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> vc: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> sc: array<vec4<f32>>;

const BIG: f32 = 3.4028234e38;

// Loops.  Chromium's shader compiler (Tint) guards every loop that it cannot prove finite with a 64-bit iteration
// counter and an exit test in each iteration, so that no shader can hang the GPU.  It proves a loop finite only in
// the form `for (var k = …; k < C; k++)` with C a constant (an override expression counts).  So every loop here
// has that form: C is the most iterations the loop can take, or NO_END where no constant bounds it, and the loop
// breaks at its real end first.  The iterations and their order are as before, and so are the results; the
// counters are gone.  (results/2026-12-07-nvidia-h100-loops: 41 of the step entry's 75 loops had one.)
const NO_END: u32 = 0xffffffffu;
override IT_MAX: u32 = (PROD + WG - 1u) / WG;              // a matvec's items per invocation at most (each is a prod slot)
override SGL_LOG: u32 = 32u - countLeadingZeros(SGL - 1u);  // ceil(log2(SGL)): SGA's shuffle rounds per position

var<workgroup> xs: array<vec4<f32>, D / 4u + D / 64u>;   // r ∘ norm weight (unnormalized), padded: see xs_at
var<workgroup> bs: array<f32, D / 32u>;                  // Σ of xs over each 32-float block (Q4_1's m term)
var<workgroup> prod: array<f32, PROD>;                    // per-item dot products; attention·V partials
var<workgroup> vec_a: array<f32, 3u * HEAD_DIM>;          // q_h | k_g | v_g
var<workgroup> q4: array<vec4<f32>, HEAD_DIM / 4u>;       // rotated q_h
var<workgroup> vec_b: array<f32, WG + WG / 32u>;          // attention probabilities of a chunk; o_h, a (padded: vb_at)
var<workgroup> red: array<f32, WG / 4u>;                  // one partial per subgroup (subgroups ≥ 4 wide)
var<workgroup> redu: array<u32, WG / 4u>;
var<workgroup> red_n: array<f32, WG / 4u>;                // DN: each subgroup's Σ r² of rmsnorm (norm_end)
var<workgroup> accw: array<u32, ACCW>;                   // RD: an accumulator's words (hi[D] | lo[D])
var<workgroup> w_step: u32;                               // broadcast slots (workgroupUniformLoad), one
var<workgroup> w_plen: u32;                               // per value so that no slot is rewritten
var<workgroup> w_tok: u32;                                // while another invocation may still read it
var<workgroup> w_pos: u32;
const SGV_MAX: u32 = 8u;                                  // SGA: vec4 dims per lane (HEAD_DIM / 4 / SGL) at most
var<private> p_slot: u32;                                 // ACC: (pos · N_LAYERS + l) % 2, this layer's slot
var<private> t_v: array<u32, 4>;                         // TOUCH: the touched words, used only by touch_keep
var<private> dep: u32;                                    // PERSIST: OR of every returned atomic of this step (gsync)
var<private> p_g: u32;                                    // PERSIST: the ATTN step's K/V group (kv_at)
var<workgroup> w_dep: atomic<u32>;                        // PERSIST: the workgroup's dep, for gsync's arrival
var<private> nx: array<u32, 30>;                          // PERSIST ≥ 2: the next step's first weight items and
var<private> nx_nw: vec4<f32>;                            // norm-weight vec4, loaded before gsync (step_load)
var<private> nx_k: array<vec4<f32>, 8>;                   // PERSIST 3: the ATTN step's first K and V items too
var<private> nx_v: array<vec4<f32>, 8>;

// Ablation for timing runs (ResidentTuning.skip; tokens are then meaningless): 1 residual partial sums,
// 2 Q|K|V matvec, 4 attention, 8 output projection, 16 gate|up matvec, 32 down projection, 64 every ATTN
// phase, 128 every FFN phase, 256 the head (its parts name token 300), 512 FINAL.
fn skip(bit: u32) -> bool { return (SKIP & bit) != 0u; }

// TOUCH (ResidentTuning.touch): a step also loads what the NEXT step will read, one word per 32-byte sector spread
// over all NWG·WG invocations (at most 4 each), so that the next step's own loads hit the L2 cache instead of
// HBM.  Bit 1: ATTN(l) touches FFN(l)'s gate|up and down; 2: FFN(l) touches Q|K|V(l + 1); 4: QKV(l) touches
// the K/V cache of layer l below pos; 8: FFN(l) also touches Wo(l + 1).  The loads are issued after the step's
// own first round trip and their values are used only by touch_keep at the end of the step (a store to a slot
// nothing reads, under a condition the compiler cannot decide), so no invocation waits for them early.
fn touch_on(bit: u32) -> bool { return (TOUCH & bit) != 0u; }

fn touch_w(a: u32, n: u32, w: u32, li: u32) {                  // W words a .. a + n
    let gi = w * WG + li;
    for (var j = 0u; j < 4u; j++) {
        let k = (gi + j * NWG * WG) * 8u;
        if (k < n) { t_v[j] = word(a + k); }
    }
}

fn touch_kv(a: u32, n: u32, w: u32, li: u32) {                 // vec4s a .. a + n of the K and V caches
    let gi = w * WG + li;
    for (var j = 0u; j < 2u; j++) {
        let k = (gi + j * NWG * WG) * 2u;
        if (k < n) {
            t_v[2u * j] = bitcast<u32>(kc[a + k].x);
            t_v[2u * j + 1u] = bitcast<u32>(vc[a + k].x);
        }
    }
}

fn touch_ffn(l: u32, w: u32, li: u32) {                       // FFN(l)'s gate|up and down
    touch_w(l * L_STRIDE + OFF_GATE, OFF_DOWN + D * (FFN / 32u) * 5u - OFF_GATE, w, li);
}

fn touch_keep() {
    if (TOUCH != 0u && (t_v[0] ^ t_v[1] ^ t_v[2] ^ t_v[3]) == 0x5eedf00du) { sc[o_touch()] = vec4<f32>(1.0); }
}

// Workgroup-memory layouts without bank conflicts.  A matvec item's block pair is p = item % (D/64), so
// neighbouring invocations read neighbouring pairs: 16 vec4s apart in a plain layout, which is the same
// banks for every lane (an 8-way conflict on every vec4 read; measured on the H200 as 15 of the 31 µs of an
// ATTN step).  One vec4 of padding per pair (xs) and one float per 32 (vec_b) spreads them over the banks.
fn xs_at(v: u32) -> u32 { return v + v / 16u; }
fn vb_at(i: u32) -> u32 { return i + i / 32u; }

// Scratch offsets, in vec4s.
fn o_x() -> u32 { return 0u; }
fn o_xm() -> u32 { return D / 4u; }
fn o_xf() -> u32 { return 2u * D / 4u; }
fn o_q() -> u32 { return 3u * D / 4u; }                      // split: the QKV step's rotated, scaled q
fn o_pa() -> u32 { return (3u * D + HEADS * HEAD_DIM) / 4u; }
fn o_pf() -> u32 { return (3u * D + HEADS * HEAD_DIM + HEADS * D) / 4u; }
fn o_hp() -> u32 { return (3u * D + HEADS * HEAD_DIM + HEADS * D + NWG * D) / 4u; }
fn o_touch() -> u32 { return o_hp() + (2u * HEAD_GROUPS + 3u) / 4u; }   // TOUCH: one vec4 that nothing reads

// Sum / max / min over the workgroup: a subgroup reduction, the subgroups' results through workgroup
// memory, reduced again by every subgroup (same inputs, same lanes: every subgroup gets the same value).
fn wg_sum(v: f32, lane: u32, sid: u32, nsg: u32, sgs: u32) -> f32 {
    let s = subgroupAdd(v);
    if (lane == 0u) { red[sid] = s; }
    workgroupBarrier();
    var t = 0.0;
    for (var k_ = 0u; k_ < WG / 4u; k_++) { let i = lane + k_ * sgs; if (i >= nsg) { break; } t += red[i]; }
    let r = subgroupAdd(t);
    workgroupBarrier();                                     // red is rewritten by the next reduction
    return r;
}

fn wg_max(v: f32, lane: u32, sid: u32, nsg: u32, sgs: u32) -> f32 {
    let s = subgroupMax(v);
    if (lane == 0u) { red[sid] = s; }
    workgroupBarrier();
    var t = -BIG;
    for (var k_ = 0u; k_ < WG / 4u; k_++) { let i = lane + k_ * sgs; if (i >= nsg) { break; } t = max(t, red[i]); }
    let r = subgroupMax(t);
    workgroupBarrier();
    return r;
}

fn wg_min_u(v: u32, lane: u32, sid: u32, nsg: u32, sgs: u32) -> u32 {
    let s = subgroupMin(v);
    if (lane == 0u) { redu[sid] = s; }
    workgroupBarrier();
    var t = 0xffffffffu;
    for (var k_ = 0u; k_ < WG / 4u; k_++) { let i = lane + k_ * sgs; if (i >= nsg) { break; } t = min(t, redu[i]); }
    let r = subgroupMin(t);
    workgroupBarrier();
    return r;
}

// Σ over one Q4_1 block (words w0 = d|m, w = nibbles) of w·xs, the block covering xs[xb·8 .. xb·8 + 8].
fn q41_xs(w0: u32, w: vec4<u32>, xb: u32) -> f32 {
    var qx = 0.0;
    for (var q = 0u; q < 4u; q++) {
        let wq = vec4<u32>(w[q]);
        qx += dot(vec4<f32>((wq >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(15u)), xs[xs_at(xb * 8u + q)])
            + dot(vec4<f32>((wq >> vec4<u32>(4u, 12u, 20u, 28u)) & vec4<u32>(15u)), xs[xs_at(xb * 8u + 4u + q)]);
    }
    let dm = unpack2x16float(w0);
    return dm.x * qx + dm.y * bs[xb];
}

// bs[b] = Σ xs over block b, once per dispatch instead of once per row (same summation order as before).
// Its barrier publishes bs (and, with DN, xs and red_n); DN bit 1 without bs_shuffle needs one first for xs.
fn block_sums(li: u32, sgs: u32) {
    if (dn_bs(sgs)) {
        workgroupBarrier();
        return;
    }
    if (dn_on(1u)) { workgroupBarrier(); }
    for (var k_ = 0u; k_ < (D / 32u + WG - 1u) / WG; k_++) {
        let b = li + k_ * WG;
        if (b >= D / 32u) { break; }
        var sx = vec4<f32>(0.0);
        for (var q = 0u; q < 4u; q++) { sx += xs[xs_at(b * 8u + q)] + xs[xs_at(b * 8u + 4u + q)]; }
        bs[b] = sx.x + sx.y + sx.z + sx.w;
    }
    workgroupBarrier();
}

// DN (see the header).
fn dn_on(bit: u32) -> bool { return (DN & bit) != 0u; }
fn dn_bs(sgs: u32) -> bool { return dn_on(2u) && sgs >= 8u && WG % sgs == 0u && D / 4u <= WG; }

// The xs vec4 a residual loop starts at: li, or with bs_shuffle the invocation's place in its subgroup's run of lanes.
fn res_idx(li: u32, lane: u32, sid: u32, sgs: u32) -> u32 { return select(li, sid * sgs + lane, dn_bs(sgs)); }

// DN bit 2: bs of the block whose vec4 i0 (res_idx) this invocation wrote as xv (8 lanes per block).
fn bs_shuffle(xv: vec4<f32>, i0: u32, lane: u32, sgs: u32) {
    if (!dn_bs(sgs)) { return; }
    var t = xv.x + xv.y + xv.z + xv.w;
    t += subgroupShuffleXor(t, 1u);
    t += subgroupShuffleXor(t, 2u);
    t += subgroupShuffleXor(t, 4u);
    if (lane % 8u == 0u && i0 < D / 4u) { bs[i0 / 8u] = t; }
}

// rmsnorm's scale from Σ r²: now (wg_sum), or with DN bit 1 each subgroup's partial into red_n and 0 (norm_scale
// after the next barrier gives the scale).
fn norm_end(ss: f32, lane: u32, sid: u32, nsg: u32, sgs: u32) -> f32 {
    if (dn_on(1u)) {
        let s = subgroupAdd(ss);
        if (lane == 0u) { red_n[sid] = s; }
        return 0.0;
    }
    return 1.0 / sqrt(wg_sum(ss, lane, sid, nsg, sgs) / f32(D) + EPS);
}

fn norm_scale(scale: f32, lane: u32, nsg: u32, sgs: u32) -> f32 {
    if (!dn_on(1u)) { return scale; }
    var t = 0.0;
    for (var k_ = 0u; k_ < WG / 4u; k_++) { let i = lane + k_ * sgs; if (i >= nsg) { break; } t += red_n[i]; }
    return 1.0 / sqrt(subgroupAdd(t) / f32(D) + EPS);
}

// Same with the vector in vec_b[vb·32 ..] (the short matvecs: output and down projection slices).
fn q41_vb(w0: u32, w: vec4<u32>, vb: u32) -> f32 {
    var qx = 0.0;
    var sx = 0.0;
    for (var q = 0u; q < 4u; q++) {
        for (var j = 0u; j < 4u; j++) {
            let lo = vec_b[vb * 33u + 4u * q + j];             // vb_at(vb·32 + …)
            let hi = vec_b[vb * 33u + 16u + 4u * q + j];
            qx += f32((w[q] >> (8u * j)) & 15u) * lo + f32((w[q] >> (8u * j + 4u)) & 15u) * hi;
            sx += lo + hi;
        }
    }
    let dm = unpack2x16float(w0);
    return dm.x * qx + dm.y * sx;
}

// FB < 32 (8 or 16): the down projection slice of an FFN workgroup is weights j0 .. j0 + FB of one block (j < 16:
// low nibble of byte j, else high nibble of byte j − 16; d and m are the block's), the vector in vec_b[0 .. FB].
fn q41_sub(w0: u32, w: vec4<u32>, j0: u32) -> f32 {
    let b0 = j0 % 16u;
    let sh = 4u * (j0 / 16u);
    var qx = 0.0;
    var sx = 0.0;
    for (var k = 0u; k < FB; k++) {
        let b = b0 + k;
        let a = vec_b[k];                                    // vb_at(k) = k for k < 32
        qx += f32((w[b / 4u] >> (8u * (b % 4u) + sh)) & 15u) * a;
        sx += a;
    }
    let dm = unpack2x16float(w0);
    return dm.x * qx + dm.y * sx;
}

// A short matvec item: the whole block vb (j0 ≥ 32), or weights j0 .. j0 + FB of it (q41_sub).
fn q41_item(w: array<u32, 5>, vb: u32, j0: u32) -> f32 {
    if (j0 < 32u) { return q41_sub(w[0], vec4<u32>(w[1], w[2], w[3], w[4]), j0); }
    return q41_vb(w[0], vec4<u32>(w[1], w[2], w[3], w[4]), vb);
}

// Long matvec (D columns): item = (local row r, block pair p); rows[part] = word offset of the part's
// first row, part = r / seg (Q|K|V: 3 parts of HEAD_DIM rows; gate|up: 2 parts of FB rows).
fn long_base(it: u32, rows: array<u32, 3>, seg: u32) -> u32 {
    let pairs = D / 64u;
    let r = it / pairs;
    return rows[min(r / seg, 2u)] + (r % seg) * (D / 32u) * 5u + (it % pairs) * 10u;
}

fn long_dot(w: array<u32, 10>, it: u32) -> f32 {
    let p = it % (D / 64u);
    return q41_xs(w[0], vec4<u32>(w[1], w[2], w[3], w[4]), 2u * p)
         + q41_xs(w[5], vec4<u32>(w[6], w[7], w[8], w[9]), 2u * p + 1u);
}

// WV = 0: one u32 load per word; WV = 1: 8-byte loads (a pair's 10 words start on an even word: see
// ResidentTuning.wv), half as many load instructions.
fn word(i: u32) -> u32 { return W[i / 2u][i % 2u]; }

fn load10(base: u32) -> array<u32, 10> {
    var w: array<u32, 10>;
    if (WV != 0u) {
        for (var j = 0u; j < 5u; j++) {
            let v = W[base / 2u + j];
            w[2u * j] = v.x;
            w[2u * j + 1u] = v.y;
        }
    } else {
        for (var j = 0u; j < 10u; j++) { w[j] = word(base + j); }
    }
    return w;
}

fn load5(base: u32) -> array<u32, 5> {
    var w: array<u32, 5>;
    if (WV != 0u) {
        let b = base / 2u;
        let a = array<vec2<u32>, 3>(W[b], W[b + 1u], W[b + 2u]);    // words 2b .. 2b + 5
        let o = base % 2u;
        for (var j = 0u; j < 5u; j++) { w[j] = a[(o + j) / 2u][(o + j) % 2u]; }
    } else {
        for (var j = 0u; j < 5u; j++) { w[j] = word(base + j); }
    }
    return w;
}

// Short matvec slice: item = (row r, block b) of `nb` blocks starting at block b0 of rows of `rw` words.
fn short_base(it: u32, mat: u32, rw: u32, b0: u32, nb: u32) -> u32 {
    return mat + (it / nb) * rw + (b0 + it % nb) * 5u;
}

// The same item's words: row-major (cmr = ROW_MAJOR: short_base), or column-major, block column c's D rows back to
// back from the matrix's start `mat`, with the slice's first row cmr (neighbouring items, neighbouring rows, are
// then 20 bytes apart instead of a row apart).
const ROW_MAJOR: u32 = 0xffffffffu;
fn short_addr(it: u32, mat: u32, rw: u32, b0: u32, nb: u32, cmr: u32) -> u32 {
    if (cmr == ROW_MAJOR) { return short_base(it, mat, rw, b0, nb); }
    return mat + ((b0 + it % nb) * D + cmr + it / nb) * 5u;
}

// The 10 words of the long-matvec item whose words start at `a` in the GGUF's order, in the matrix (q|k|v or
// gate|up) that starts at word `mat`: there (load10), or with CM bit 4 where the word-interleaved copy holds them,
// word j of item g = (a − mat) / 10 at mat + (g / 32) · 320 + j · 32 + g % 32, so that 32 neighbouring items'
// j-th words are one 128-byte line.
fn load10_in(a: u32, mat: u32) -> array<u32, 10> {
    if ((CM & 4u) == 0u) { return load10(a); }
    let g = (a - mat) / 10u;
    let b = mat + (g / 32u) * 320u + g % 32u;
    var w: array<u32, 10>;
    for (var j = 0u; j < 10u; j++) { w[j] = word(b + j * 32u); }
    return w;
}

// The long matvec: items li and li + WG were prefetched into pre0 / pre1, the rest load here (matrix at mat).
fn long_matvec(li: u32, n: u32, rows: array<u32, 3>, seg: u32, pre0: array<u32, 10>, pre1: array<u32, 10>, mat: u32) {
    if (li < n) { prod[li] = long_dot(pre0, li); }
    if (li + WG < n) { prod[li + WG] = long_dot(pre1, li + WG); }
    for (var k_ = 2u; k_ < IT_MAX; k_++) { let it = li + k_ * WG; if (it >= n) { break; } prod[it] = long_dot(load10_in(long_base(it, rows, seg), mat), it); }
}

// The short matvec into prod (one value per item); items li, li + WG (and li + 2·WG when npre = 3) prefetched;
// j0 ≥ 32: whole blocks, else a sub-block slice (q41_item).
fn short_matvec(li: u32, n: u32, mat: u32, rw: u32, b0: u32, nb: u32, pre0: array<u32, 5>, pre1: array<u32, 5>,
                pre2: array<u32, 5>, npre: u32, j0: u32, cmr: u32) {
    if (li < n) { prod[li] = q41_item(pre0, li % nb, j0); }
    if (li + WG < n) { prod[li + WG] = q41_item(pre1, (li + WG) % nb, j0); }
    if (npre > 2u && li + 2u * WG < n) { prod[li + 2u * WG] = q41_item(pre2, (li + 2u * WG) % nb, j0); }
    for (var k_ = 0u; k_ < IT_MAX; k_++) {
        let it = li + npre * WG + k_ * WG;
        if (it >= n) { break; }
        prod[it] = q41_item(load5(short_addr(it, mat, rw, b0, nb, cmr)), it % nb, j0);
    }
}

fn row_sum(r: u32, per: u32) -> f32 {
    var s = 0.0;
    for (var p = 0u; p < PROD; p++) { if (p >= per) { break; } s += prod[r * per + p]; }
    return s;
}

fn sc_get(f: u32) -> f32 { return sc[f / 4u][f % 4u]; }
fn sc_set(f: u32, v: f32) { sc[f / 4u][f % 4u] = v; }

// Σ of `np` partial vectors (D floats each, from vec4 `pb` of sc) for vec4 column i < D/4.  gather() spreads
// the reads over groups of D/4 invocations (group g sums partials g, g + groups, …, a fixed number of
// predicated loads that can all be in flight at once) into prod; partials() then adds the groups.
// (Measured on the H200: one invocation per column summing all 48 FFN partials itself was slower.)
fn psum_groups(np: u32) -> u32 { return max(1u, min(WG / (D / 4u), np)); }

fn gather(li: u32, pb: u32, np: u32) {
    if (skip(1u)) { return; }
    let d4 = D / 4u;
    let ng = psum_groups(np);
    let per = (np + ng - 1u) / ng;
    for (var k_ = 0u; k_ < (max(WG, D / 4u) + WG - 1u) / WG; k_++) {   // one pass unless WG < D/4
        let e = li + k_ * WG;
        if (e >= ng * d4) { break; }
        let c = e % d4;
        let g = e / d4;
        var t = vec4<f32>(0.0);
        for (var k = 0u; k < max(NWG, HEADS); k++) {
            if (k >= per) { break; }
            let f = g + k * ng;
            if (f < np) { t += sc[pb + f * d4 + c]; }
        }
        for (var j = 0u; j < 4u; j++) { prod[4u * e + j] = t[j]; }
    }
    workgroupBarrier();
}

fn partials(i: u32, np: u32) -> vec4<f32> {
    var r = vec4<f32>(0.0);
    if (skip(1u)) { return r; }
    for (var g = 0u; g < max(1u, WG / (D / 4u)); g++) {
        if (g >= psum_groups(np)) { break; }
        let k = 4u * (g * (D / 4u) + i);
        r += vec4<f32>(prod[k], prod[k + 1u], prod[k + 2u], prod[k + 3u]);
    }
    return r;
}

// ACC = 1: the residual stream's sums as exact fixed-point integers instead of partial vectors.  A value v
// is N = v · 2^32 rounded down, kept as hi = floor(v · 2^8) (i32) and lo = the remaining 24 bits (u32), in two
// words that every contributor atomicAdds into; Σ lo of ≤ 255 contributors cannot overflow, so no carry is
// needed when adding (ACC = 2, below acc_at, carries when reading) and the adds can be fire-and-forget.  Integer addition is associative: the sum does not depend on
// the order the workgroups arrive in, and it is exact up to 2^-32 per term (|v| < 65536 for an exact hi; the
// sum must stay under 2^23).  Accumulator a (words st.tokens[a .. a + 2·D): hi[D] | lo[D]), ahead of the
// tokens, so that its address needs no st.ctx (one round trip less before a step's first read): which 0 = RA (the
// residual after the attention: the layer's input + Σ heads' output-projection slices), 1 = RF (after the
// FFN: RA + Σ down-projection slices); two slots each, alternating per layer (p_slot).  The dispatch after
// the one that reads a slot zeroes it (acc_zero), before the layer after next adds into it again.
fn acc_at(which: u32, slot: u32) -> u32 { return (2u * which + slot) * 2u * D; }

// Where tokens[0] is in st.tokens: after the accumulators.
fn tok0() -> u32 { return select(0u, 8u * D, ACC != 0u) + select(0u, stage_words(), PERSIST != 0u); }

// PERSIST: the staging words after the accumulators, one per row of the joined Q|K|V matrix (q rotated and
// scaled, then this position's k and v), written by the QKV step with returning atomics and read by the ATTN
// step with atomic loads: within one dispatch, only atomics are both ordered by gsync and free of stale L1 lines.
fn stage_words() -> u32 { return (HEADS + 2u * KV_HEADS) * HEAD_DIM; }
fn stage0() -> u32 { return 8u * D; }
fn stage_put(row: u32, v: f32) { dep |= atomicExchange(&st.tokens[stage0() + row], bitcast<u32>(v)); }
fn stage4(row: u32) -> vec4<f32> {
    let a = stage0() + row;
    return vec4<f32>(bitcast<f32>(atomicLoad(&st.tokens[a])), bitcast<f32>(atomicLoad(&st.tokens[a + 1u])),
                     bitcast<f32>(atomicLoad(&st.tokens[a + 2u])), bitcast<f32>(atomicLoad(&st.tokens[a + 3u])));
}

// ACC = 2: hi = round(v · 16) and lo = the signed remainder in units of 2^-28 (|lo| ≤ 2^23, so Σ lo of ≤ 255
// contributors fits an i32), so that a term with |v| < 1/32, most of the FFN's and the output projection's
// slices, adds one word instead of two; exact up to 2^-28 per term (|v| < 2^26).
fn acc_add(a: u32, i: u32, v: f32) {
    if (skip(1u)) { return; }
    var t = v * 256.0;
    var hi = floor(t);
    if (ACC == 2u) {
        t = v * 16.0;
        hi = round(t);
    }
    let lo = bitcast<u32>(i32(floor((t - hi) * 16777216.0)));
    let h = bitcast<u32>(i32(clamp(hi, -2147483520.0, 2147483520.0)));
    if (PERSIST != 0u) {                                     // returning adds: gsync waits for them (dep)
        if (h != 0u) { dep |= atomicAdd(&st.tokens[a + i], h); }
        if (lo != 0u) { dep |= atomicAdd(&st.tokens[a + D + i], lo); }
        return;
    }
    if (h != 0u) { atomicAdd(&st.tokens[a + i], h); }
    if (lo != 0u) { atomicAdd(&st.tokens[a + D + i], lo); }
}

fn acc_add4(a: u32, i: u32, v: vec4<f32>) {
    for (var c = 0u; c < 4u; c++) { acc_add(a, 4u * i + c, v[c]); }
}

fn acc_val(hi_w: u32, lo: u32) -> f32 {
    let hi = bitcast<i32>(hi_w);
    if (ACC == 2u) {                                         // carry the signed sum's high bits into hi: both
        let hn = hi + (bitcast<i32>(lo) >> 24u);             // conversions exact, one rounding in the add
        return f32(hn) * (1.0 / 16.0) + f32(lo & 0xffffffu) * (1.0 / 268435456.0);
    }
    return f32(hi) * (1.0 / 256.0) + f32(lo) * (1.0 / 4294967296.0);
}

fn acc_get4(a: u32, i: u32) -> vec4<f32> {
    var r = vec4<f32>(0.0);
    if (skip(1u)) { return r; }
    for (var c = 0u; c < 4u; c++) {
        r[c] = acc_val(atomicLoad(&st.tokens[a + 4u * i + c]), atomicLoad(&st.tokens[a + D + 4u * i + c]));
    }
    return r;
}

// RD = 1: the workgroup's invocations each load at most ceil(2·D / WG) words of accumulator a into accw (instead of
// D / 4 invocations loading 8 atomics each, one after another), then acc_w4 converts from accw.  Call from
// uniform control flow (a barrier).
fn acc_fetch(a: u32, li: u32) {
    if (RD == 0u || skip(1u)) { return; }
    for (var k_ = 0u; k_ < (2u * D + WG - 1u) / WG; k_++) { let i = li + k_ * WG; if (i >= 2u * D) { break; } accw[i] = atomicLoad(&st.tokens[a + i]); }
    workgroupBarrier();
}

// Norm weight vec4 i of the norm at vec4 nb, with the first one (i = li) already loaded as nw0.
fn norm_w(nb: u32, i: u32, li: u32, nw0: vec4<f32>) -> vec4<f32> {
    if (i == li) { return nw0; }
    return nw[nb + i];
}

// acc_get4(a, i), from accw when RD (acc_fetch(a) first).
fn acc_r4(a: u32, i: u32) -> vec4<f32> {
    if (RD == 0u || skip(1u)) { return acc_get4(a, i); }
    var r = vec4<f32>(0.0);
    for (var c = 0u; c < 4u; c++) { r[c] = acc_val(accw[4u * i + c], accw[D + 4u * i + c]); }
    return r;
}

fn acc_zero(a: u32, li: u32) {
    for (var k_ = 0u; k_ < (2u * D + WG - 1u) / WG; k_++) {
        let i = li + k_ * WG;
        if (i >= 2u * D) { break; }
        if (PERSIST != 0u) { dep |= atomicExchange(&st.tokens[a + i], 0u); } else { atomicStore(&st.tokens[a + i], 0u); }
    }
}

// GRID = 1: this token's position, read after the caller has issued its weight loads (GRID = 0: the counter's).
fn cur_pos(li: u32, pos: u32, l: u32) -> u32 {
    var p = pos;
    if (GRID != 0u && PERSIST == 0u) {                       // PERSIST: the dispatch read it once, at its start
        if (li == 0u) { w_pos = st.pos; }
        p = workgroupUniformLoad(&w_pos);
    }
    p_slot = (p * N_LAYERS + l) % 2u;
    return p;
}

// Whether p_slot needs the position: with an even N_LAYERS it is l % 2 at every position, so a GRID step need
// not wait for st.pos before it reads the accumulators.
fn slot_needs_pos() -> bool { return GRID == 0u || N_LAYERS % 2u != 0u; }

// p_slot alone.
fn set_slot(li: u32, pos: u32, l: u32) {
    if (slot_needs_pos()) { cur_pos(li, pos, l); } else { p_slot = l % 2u; }
}

// Q8_0 pair p (blocks 2p, 2p + 1) of row `row` of E · xs.
fn q80_pair(row: u32, p: u32) -> f32 { return q80_dot(q80_load(row, p), p); }

// HQ: word k of head item g (row · D/64 + pair) in the plan's copy (wgsl/repack_head.wgsl): 0..7 block 0's quants,
// 8..15 block 1's, 16 and 17 their scales as f32 bits; a warp's items are one chunk, so its k-th loads one line.
fn e_word(g: u32, k: u32) -> u32 { return E[((g / 32u) * 18u + k) * 32u + g % 32u]; }

// The words of that pair (HPRE: the head loads its first item's before it reads the residual): in place, 17 words
// (f16 d0 | 32 int8 | f16 d1 | 32 int8, so block 0's quants straddle words); HQ: the copy's 18.
fn q80_load(row: u32, p: u32) -> array<u32, 18> {
    var w: array<u32, 18>;
    if (HQ != 0u) {
        let g = row * (D / 64u) + p;
        for (var k = 0u; k < 18u; k++) { w[k] = e_word(g, k); }
        return w;
    }
    let b = (row * (D / 64u) + p) * 17u;
    for (var i = 0u; i < 17u; i++) { w[i] = E[b + i]; }
    return w;
}

fn i8x4(v: u32) -> vec4<f32> {                              // 4 int8, element 0 in the low byte
    return vec4<f32>(bitcast<vec4<i32>>(vec4<u32>(v) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}

fn q80_dot(w: array<u32, 18>, p: u32) -> f32 {
    var s0 = 0.0;
    var s1 = 0.0;
    for (var i = 0u; i < 8u; i++) {
        var q0: vec4<f32>;
        var q1: vec4<f32>;
        if (HQ != 0u) {
            q0 = i8x4(w[i]);
            q1 = i8x4(w[8u + i]);
        } else {
            q0 = i8x4((w[i] >> 16u) | (w[i + 1u] << 16u));
            q1 = i8x4(w[9u + i]);
        }
        s0 += dot(q0, xs[xs_at(p * 16u + i)]);
        s1 += dot(q1, xs[xs_at(p * 16u + 8u + i)]);
    }
    if (HQ != 0u) { return bitcast<f32>(w[16]) * s0 + bitcast<f32>(w[17]) * s1; }
    return unpack2x16float(w[0]).x * s0 + unpack2x16float(w[8]).y * s1;
}

// Embedding row of `token`, element i (Q8_0 blocks read by byte offset; HQ: from the copy's item).
fn embed_at(token: u32, i: u32) -> f32 {
    if (HQ != 0u) {
        let g = token * (D / 64u) + i / 64u;
        let h = (i % 64u) / 32u;                             // block of the pair
        let j = i % 32u;
        let q = bitcast<i32>(((e_word(g, 8u * h + j / 4u) >> ((j % 4u) * 8u)) & 0xffu) << 24u) >> 24u;
        return bitcast<f32>(e_word(g, 16u + h)) * f32(q);
    }
    let blk = (token * (D / 32u) + i / 32u) * 34u;
    let d = unpack2x16float(E[blk >> 2u])[(blk >> 1u) & 1u];
    let o = blk + 2u + i % 32u;
    let q = bitcast<i32>(((E[o >> 2u] >> ((o & 3u) * 8u)) & 0xffu) << 24u) >> 24u;
    return d * f32(q);
}

// PERSIST: the grid barrier after a step (the steps of a token are one dispatch of NWG workgroups).  Every
// invocation's atomics of the step have returned once its dep is known, so the workgroup's arrival (st.ctr += 1,
// whose operand depends on every dep through w_dep and a barrier; goal < 2^31, so the operand is 1) is issued
// only after they were performed; the step's only cross-workgroup writes are such atomics (acc_add, acc_zero,
// stage_put).  Invocation 0 then polls st.ctr until all NWG workgroups of this barrier have arrived: `goal`,
// counted from 0 at position 0 (state_init).  This needs all NWG workgroups resident at once, which WebGPU does
// not promise: after SPIN polls it sets FAIL_BIT in st.ctr, which releases every barrier at once (tokens then
// come back as FAIL_TOKEN: mark_failed) instead of hanging.
const FAIL_BIT: u32 = 0x80000000u;
const FAIL_TOKEN: u32 = 0xffffffffu;

fn gsync(goal: u32, li: u32) {
    atomicOr(&w_dep, dep);
    workgroupBarrier();
    if (li == 0u) {
        atomicAdd(&st.ctr, 1u + (atomicLoad(&w_dep) & (goal >> 31u)));
        for (var n = 0u; n <= SPIN; n++) {                   // SPIN + 1 polls at most
            if (atomicLoad(&st.ctr) >= goal) { break; }
            if (n == SPIN) { atomicOr(&st.ctr, FAIL_BIT); }
        }
    }
    workgroupBarrier();
}

// PERSIST: FAIL_TOKEN in place of a token once a grid barrier gave up.
fn mark_failed(token: u32) -> u32 {
    if (PERSIST != 0u && atomicLoad(&st.ctr) >= FAIL_BIT) { return FAIL_TOKEN; }
    return token;
}

// argmax over the head's parts HP (value, index): lowest index among equal maxima.
fn parts_argmax(li: u32, lane: u32, sid: u32, nsg: u32, sgs: u32) -> u32 {
    var v = -BIG;
    var idx = 0xffffffffu;
    for (var k_ = 0u; k_ < (HEAD_GROUPS + WG - 1u) / WG; k_++) {
        let i = li + k_ * WG;
        if (i >= HEAD_GROUPS) { break; }
        let pv = sc_get(4u * o_hp() + 2u * i);
        let pi = bitcast<u32>(sc_get(4u * o_hp() + 2u * i + 1u));
        if (pv > v || (pv == v && pi < idx)) {
            v = pv;
            idx = pi;
        }
    }
    let top = wg_max(v, lane, sid, nsg, sgs);
    return wg_min_u(select(0xffffffffu, idx, v == top), lane, sid, nsg, sgs);
}

// The residual entering layer l (the embedding of this position's token at l = 0, whose pick from the
// head's parts workgroup `w` = 0 writes back; else XM + Σ PF), into X (workgroup w = 0) and xs = r ∘ attn_norm;
// returns rmsnorm's scale.
fn residual_in(l: u32, pos: u32, w: u32, li: u32, lane: u32, sid: u32, nsg: u32, sgs: u32) -> f32 {
    let tok_phase = l == 0u;
    var token = 0u;
    if (tok_phase) {
        if (li == 0u) { w_plen = st.prompt_len; }
        let plen = workgroupUniformLoad(&w_plen);
        if (pos < plen) {
            if (li == 0u) { w_tok = atomicLoad(&st.tokens[tok0() + pos]); }
            token = workgroupUniformLoad(&w_tok);
        } else {
            token = parts_argmax(li, lane, sid, nsg, sgs);
            if (w == 0u && li == 0u) { atomicStore(&st.tokens[tok0() + pos], mark_failed(token)); }
        }
    }
    if (!tok_phase && ACC == 0u) { gather(li, o_pf(), NWG); }
    let nb = (l * N_STRIDE) / 4u;
    let i0 = res_idx(li, lane, sid, sgs);
    var nw0 = nx_nw;                                         // RD: asked for before the barrier of acc_fetch
    if (PERSIST < 2u) { nw0 = nw[nb + min(i0, D / 4u - 1u)]; }
    if (!tok_phase && ACC != 0u) { acc_fetch(acc_at(1u, 1u - p_slot), li); }
    var ss = 0.0;
    var xv = vec4<f32>(0.0);
    for (var k_ = 0u; k_ < (D / 4u + WG - 1u) / WG; k_++) {
        let i = i0 + k_ * WG;
        if (i >= D / 4u) { break; }
        var r = vec4<f32>(0.0);
        if (tok_phase) {
            r = vec4<f32>(embed_at(token, 4u * i), embed_at(token, 4u * i + 1u), embed_at(token, 4u * i + 2u),
                          embed_at(token, 4u * i + 3u));
        } else if (ACC != 0u) {
            r = acc_r4(acc_at(1u, 1u - p_slot), i);               // RF of the layer before
        } else {
            r = sc[o_xm() + i] + partials(i, NWG);
        }
        if (w == 0u) {
            if (ACC != 0u) { acc_add4(acc_at(0u, p_slot), i, r); } else { sc[o_x() + i] = r; }
        }
        ss += dot(r, r);
        xv = r * norm_w(nb, i, i0, nw0);
        xs[xs_at(i)] = xv;
    }
    bs_shuffle(xv, i0, lane, sgs);
    return norm_end(ss, lane, sid, nsg, sgs);               // DN = 0: its barrier publishes xs

}

// ATTN(l) for workgroup w < HEADS · WO_PARTS: head h = w / WO_PARTS, and part w % WO_PARTS of the rows of
// its output-projection slice (every part of a head computes the same attention).
fn attn(l: u32, w: u32, pos_in: u32, ctx: u32, li: u32, lane: u32, sid: u32, nsg: u32, sgs: u32) {
    let h = w / WO_PARTS;
    let part = w % WO_PARTS;
    let g = h / (HEADS / KV_HEADS);
    let kvd4 = KV_HEADS * HEAD_DIM / 4u;
    let lw = l * L_STRIDE;
    let rw = (D / 32u) * 5u;
    let rows = array<u32, 3>(lw + h * HEAD_DIM * rw, lw + (HEADS + g) * HEAD_DIM * rw,
                             lw + (HEADS + KV_HEADS + g) * HEAD_DIM * rw);
    let n_qkv = 3u * HEAD_DIM * (D / 64u);
    let ob = HEAD_DIM / 32u;                                 // blocks per row of this head's Wo slice
    let orows = (D + WO_PARTS - 1u) / WO_PARTS;              // rows per part (ResidentTuning.check: none empty)
    let or0 = part * orows;
    let onr = min(orows, D - or0);
    let n_o = onr * ob;
    let orw = (HEADS * HEAD_DIM / 32u) * 5u;
    let omat = lw + OFF_O + or0 * orw;
    // Weights first: nothing below changes them.
    var pq0: array<u32, 10>;
    var pq1: array<u32, 10>;
    if (SPLIT == 0u) {
        pq0 = load10_in(long_base(min(li, n_qkv - 1u), rows, HEAD_DIM), lw);
        pq1 = load10_in(long_base(min(li + WG, n_qkv - 1u), rows, HEAD_DIM), lw);
    }
    let o_cm = (CM & 2u) != 0u;                             // the output projection's layout (short_addr)
    let ocr = select(ROW_MAJOR, or0, o_cm);
    let om = select(omat, lw + OFF_O, o_cm);
    var po: array<u32, 15>;
    if (PERSIST >= 2u) { for (var k = 0u; k < 15u; k++) { po[k] = nx[k]; } } else { po = attn_load(l, w, li); }
    let po0 = array<u32, 5>(po[0], po[1], po[2], po[3], po[4]);
    let po1 = array<u32, 5>(po[5], po[6], po[7], po[8], po[9]);
    let po2 = array<u32, 5>(po[10], po[11], po[12], po[13], po[14]);
    let qd = HEAD_DIM / 4u;                                  // vec4s per head
    var q_early = vec4<f32>(0.0);                            // split: q_h, from the QKV step
    if (SPLIT != 0u && li < qd) {
        if (PERSIST != 0u) { q_early = stage4(h * HEAD_DIM + 4u * li); } else { q_early = sc[o_q() + h * qd + li]; }
    }
    p_g = g;
    let pos = cur_pos(li, pos_in, l);
    // And the first KV_PRE K and V vec4s this invocation's attention will read (see attn_old / attn_sg for
    // which): the cache of earlier positions is final (split: this position's too), so their latency overlaps
    // everything up to the attention instead of one round trip per round inside it.  (Issuing them before
    // st.pos is known, for every position below ctx, was slower on the H200: 0.754 vs 0.732 GPU ms/token with
    // sga and wo_parts 5, results/2026-12-03-nvidia-h200-sga.)
    let cache0 = l * ctx * kvd4 + g * qd;                   // vec4 offset of (l, position 0, group g)
    var kpf: array<vec4<f32>, 8>;
    var vpf: array<vec4<f32>, 8>;
    if (PERSIST >= 3u) {                                     // loaded before gsync (this position's: kv_at's staging)
        kpf = nx_k;
        vpf = nx_v;
    } else {
        for (var e = 0u; e < KV_PRE; e++) {                  // a constant bound: unrolled, in registers
            let tv = kv_item(e, li, lane, sid, sgs);
            if (tv.x <= pos) {
                kpf[e] = kc[cache0 + tv.x * kvd4 + tv.y];
                vpf[e] = vc[cache0 + tv.x * kvd4 + tv.y];
            }
        }
    }
    if (touch_on(1u)) { touch_ffn(l, w, li); }

    if (SPLIT == 0u) {
        let q_part = residual_in(l, pos, w, li, lane, sid, nsg, sgs);
        // q_h | k_g | v_g (3·HEAD_DIM rows of the joined Q|K|V matrix).
        block_sums(li, sgs);
        if (!skip(2u)) { long_matvec(li, n_qkv, rows, HEAD_DIM, pq0, pq1, lw); }
        workgroupBarrier();
        let q_scale = norm_scale(q_part, lane, nsg, sgs);
        for (var k_ = 0u; k_ < (3u * HEAD_DIM + WG - 1u) / WG; k_++) { let r = li + k_ * WG; if (r >= 3u * HEAD_DIM) { break; } vec_a[r] = row_sum(r, D / 64u) * q_scale; }
        workgroupBarrier();

        // RoPE (NORM mode: adjacent pairs) on q_h and k_g, in place.
        let half = HEAD_DIM / 2u;
        for (var k_ = 0u; k_ < (HEAD_DIM + WG - 1u) / WG; k_++) {
            let p = li + k_ * WG;
            if (p >= 2u * half) { break; }
            let i = p % half;
            let j = (p / half) * HEAD_DIM + 2u * i;
            if (2u * i < ROPE_DIM) {
                let cs = rope[pos * (ROPE_DIM / 2u) + i];
                let a = vec_a[j];
                let b = vec_a[j + 1u];
                vec_a[j] = a * cs.x - b * cs.y;
                vec_a[j + 1u] = a * cs.y + b * cs.x;
            }
        }
        workgroupBarrier();
        for (var k_ = 0u; k_ < (HEAD_DIM / 4u + WG - 1u) / WG; k_++) {
            let j = li + k_ * WG;
            if (j >= qd) { break; }
            q4[j] = vec4<f32>(vec_a[4u * j], vec_a[4u * j + 1u], vec_a[4u * j + 2u], vec_a[4u * j + 3u]);
        }
        if (h % (HEADS / KV_HEADS) == 0u && part == 0u && pos < ctx) {
            for (var k_ = 0u; k_ < (HEAD_DIM / 2u + WG - 1u) / WG; k_++) {
                let j = li + k_ * WG;
                if (j >= 2u * qd) { break; }
                let k = HEAD_DIM + 4u * j;
                let v4 = vec4<f32>(vec_a[k], vec_a[k + 1u], vec_a[k + 2u], vec_a[k + 3u]);
                if (j < qd) { kc[cache0 + pos * kvd4 + j] = v4; } else { vc[cache0 + pos * kvd4 + j - qd] = v4; }
            }
        }
    } else if (li < qd) {
        q4[li] = q_early;
    }
    workgroupBarrier();                                      // q4 ready

    // o_h = softmax(q·K / √HEAD_DIM) · V over positions 0..pos, into vec_b.
    if (SGA != 0u) {
        attn_sg(pos, cache0, li, lane, sid, nsg, sgs, kpf, vpf);
    } else {
        attn_old(pos, cache0, li, lane, sid, nsg, sgs, kpf, vpf);
    }

    // PA[h] (rows or0 .. or0 + onr) = Wo[rows, h·HEAD_DIM .. +HEAD_DIM] · o_h.
    if (!skip(8u)) { short_matvec(li, n_o, om, orw, h * ob, ob, po0, po1, po2, 3u, 32u, ocr); }
    workgroupBarrier();
    if (ACC != 0u) {
        for (var k_ = 0u; k_ < (D + WG - 1u) / WG; k_++) { let r = li + k_ * WG; if (r >= onr) { break; } acc_add(acc_at(0u, p_slot), or0 + r, row_sum(r, ob)); }
    } else {
        for (var k_ = 0u; k_ < (D + WG - 1u) / WG; k_++) { let r = li + k_ * WG; if (r >= onr) { break; } sc_set(4u * o_pa() + h * D + or0 + r, row_sum(r, ob)); }
    }
}

// Which K/V vec4 the e-th prefetched item of invocation li is: (position, vec4 within the head's K or V).
// attn_old: dims li % qd of positions li / qd + e·lanes (one chunk).  attn_sg: slot s (SGL lanes of a
// subgroup), dims lane % SGL + j·SGL of positions s + k·(WG / SGL), for e = k·SGV + j.
fn kv_item(e: u32, li: u32, lane: u32, sid: u32, sgs: u32) -> vec2<u32> {
    let qd = HEAD_DIM / 4u;
    if (SGA != 0u) {
        let sgv = qd / SGL;
        return vec2<u32>(sga_slot(lane, sid, sgs) + (e / sgv) * (WG / SGL), lane % SGL + (e % sgv) * SGL);
    }
    return vec2<u32>(li / qd + e * (WG / qd), li % qd);
}

// K or V (which: 0, 1) of (position t, vec4 dq) for item e: this position's own from vec_a (SPLIT = 0: this
// dispatch computed it), a prefetched item from registers, else from the cache.
fn kv_at(which: u32, t: u32, dq: u32, e: u32, pos: u32, cache0: u32, kpf: array<vec4<f32>, 8>,
         vpf: array<vec4<f32>, 8>) -> vec4<f32> {
    if (SPLIT == 0u && t == pos) {
        let k = (1u + which) * HEAD_DIM + 4u * dq;
        return vec4<f32>(vec_a[k], vec_a[k + 1u], vec_a[k + 2u], vec_a[k + 3u]);
    }
    if (PERSIST != 0u && SPLIT != 0u && t == pos) {           // this position's, from the QKV step's staging
        return stage4((HEADS + which * KV_HEADS + p_g) * HEAD_DIM + 4u * dq);
    }
    var r = vec4<f32>(0.0);
    if (e < KV_PRE) {
        for (var j = 0u; j < KV_PRE; j++) { if (j == e) { r = select(kpf[j], vpf[j], which == 1u); } }   // static
    } else if (which == 0u) {
        r = kc[cache0 + t * KV_HEADS * HEAD_DIM / 4u + dq];
    } else {
        r = vc[cache0 + t * KV_HEADS * HEAD_DIM / 4u + dq];
    }
    return r;
}

// In chunks of WG positions.  Invocation (tp, dq) handles dims dq of positions tp, tp + lanes, … of a
// chunk, for the scores (partial dots summed over sw lanes by subgroup shuffles, then over the chunk's
// qd / sw parts through prod) and for P·V: neighbouring lanes read neighbouring vec4s of one position's K
// and V.  Prefetched items: the first KV_PRE rounds of the first chunk.
fn attn_old(pos: u32, cache0: u32, li: u32, lane: u32, sid: u32, nsg: u32, sgs: u32, kpf: array<vec4<f32>, 8>,
            vpf: array<vec4<f32>, 8>) {
    let qd = HEAD_DIM / 4u;
    let lanes = WG / qd;                                    // position lanes (qd vec4 dims each)
    let dq = li % qd;
    let tp = li / qd;
    let n = pos + 1u;
    let inv = 1.0 / sqrt(f32(HEAD_DIM));
    let sw = min(sgs, qd);                                  // lanes summed by shuffles (both powers of two)
    let parts_per = qd / sw;
    var m_run = -BIG;
    var l_run = 0.0;
    var acc = vec4<f32>(0.0);
    if (skip(4u)) { l_run = 1.0; }
    for (var k_ = 0u; k_ < NO_END; k_++) {
        let c0 = k_ * WG;
        if (c0 >= select(n, 0u, skip(4u))) { break; }
        let len = min(WG, n - c0);
        let kmax = (len + lanes - 1u) / lanes;
        for (var k = 0u; k < HEAD_DIM / 4u; k++) {
            if (k >= kmax) { break; }
            let u = tp + k * lanes;
            let t = c0 + u;
            var kv = vec4<f32>(0.0);
            if (u < len) { kv = kv_at(0u, t, dq, select(KV_PRE, k, c0 == 0u), pos, cache0, kpf, vpf); }
            var d = dot(q4[dq], kv);
            for (var e = 0u; e < 32u; e++) {
                if ((1u << e) >= sw) { break; }
                d += subgroupShuffleXor(d, 1u << e);
            }
            if (u < len && dq % sw == 0u) { prod[u * parts_per + dq / sw] = d; }
        }
        workgroupBarrier();
        var s = -BIG;
        if (li < len) {
            var d = 0.0;
            for (var j = 0u; j < HEAD_DIM / 4u; j++) { if (j >= parts_per) { break; } d += prod[li * parts_per + j]; }
            s = d * inv;
        }
        let m_new = max(m_run, wg_max(s, lane, sid, nsg, sgs));
        var e = 0.0;
        if (li < len) { e = exp(s - m_new); }
        vec_b[li] = e;
        let corr = exp(m_run - m_new);
        l_run = l_run * corr + wg_sum(e, lane, sid, nsg, sgs);   // its barriers publish vec_b
        acc *= corr;
        for (var k = 0u; k < HEAD_DIM / 4u; k++) {
            if (k >= kmax) { break; }
            let u = tp + k * lanes;
            if (u < len) { acc += vec_b[u] * kv_at(1u, c0 + u, dq, select(KV_PRE, k, c0 == 0u), pos, cache0, kpf, vpf); }
        }
        m_run = m_new;
        workgroupBarrier();                                  // vec_b and prod are rewritten by the next chunk
    }
    // Σ over position lanes: inside each subgroup (lanes qd apart share dims), then across subgroups.
    var parts = lanes;
    var slot = tp;
    var writer = true;
    if (sgs >= qd) {
        for (var e = 0u; e < 32u; e++) {
            if ((qd << e) >= sgs) { break; }
            acc += subgroupShuffleXor(acc, qd << e);
        }
        parts = nsg;
        slot = sid;
        writer = lane < qd;
    }
    if (writer) {
        for (var c = 0u; c < 4u; c++) { prod[slot * HEAD_DIM + 4u * dq + c] = acc[c]; }
    }
    workgroupBarrier();
    if (li < HEAD_DIM) {
        var o = 0.0;
        for (var q = 0u; q < WG; q++) { if (q >= parts) { break; } o += prod[q * HEAD_DIM + li]; }
        vec_b[vb_at(li)] = o / l_run;
    }
    workgroupBarrier();
}

// SGA: the slot (group of SGL lanes sharing a position) of this lane; its dims are lane % SGL + j·SGL.
fn sga_slot(lane: u32, sid: u32, sgs: u32) -> u32 { return sid * (sgs / SGL) + lane / SGL; }

// SGA = 1: no workgroup barrier until the end.  SGL lanes of a subgroup share a position (SGV = HEAD_DIM/4/SGL
// vec4 dims each, dims lane % SGL + j·SGL); such a group of lanes, a slot, takes positions slot,
// slot + WG/SGL, … with its own running max, sum and P·V (online softmax: scores summed over the slot's
// lanes by shuffles, so every lane has them).  Then the slots of a subgroup merge by shuffles, the
// subgroups' results through prod, red and redu.
fn attn_sg(pos: u32, cache0: u32, li: u32, lane: u32, sid: u32, nsg: u32, sgs: u32, kpf: array<vec4<f32>, 8>,
           vpf: array<vec4<f32>, 8>) {
    let sgv = HEAD_DIM / 4u / SGL;
    let slots = WG / SGL;
    let slot = sga_slot(lane, sid, sgs);
    let d0 = lane % SGL;
    let n = pos + 1u;
    let inv = 1.0 / sqrt(f32(HEAD_DIM));
    var qv: array<vec4<f32>, SGV_MAX>;
    var acc: array<vec4<f32>, SGV_MAX>;
    for (var j = 0u; j < SGV_MAX; j++) {
        acc[j] = vec4<f32>(0.0);
        if (j < sgv) { qv[j] = q4[d0 + j * SGL]; }
    }
    var m = -BIG;
    var lsum = 0.0;
    let kmax = select((n + slots - 1u) / slots, 0u, skip(4u));   // the same for every slot: uniform shuffles
    for (var k = 0u; k < NO_END; k++) {
        if (k >= kmax) { break; }
        let t = slot + k * slots;
        let ok = t < n;
        var d = 0.0;
        for (var j = 0u; j < SGV_MAX; j++) {
            if (j < sgv && ok) { d += dot(qv[j], kv_at(0u, t, d0 + j * SGL, k * sgv + j, pos, cache0, kpf, vpf)); }
        }
        for (var e = 0u; e < SGL_LOG; e++) { d += subgroupShuffleXor(d, 1u << e); }
        if (ok) {
            let s = d * inv;
            let m_new = max(m, s);
            let corr = exp(m - m_new);
            let p = exp(s - m_new);
            lsum = lsum * corr + p;
            for (var j = 0u; j < SGV_MAX; j++) {
                if (j < sgv) { acc[j] = acc[j] * corr + p * kv_at(1u, t, d0 + j * SGL, k * sgv + j, pos, cache0, kpf, vpf); }
            }
            m = m_new;
        }
    }
    for (var e = 0u; e < 32u; e++) {                          // the slots of this subgroup
        let o = SGL << e;
        if (o >= sgs) { break; }
        let m_o = subgroupShuffleXor(m, o);
        let l_o = subgroupShuffleXor(lsum, o);
        let mm = max(m, m_o);
        let c1 = exp(m - mm);
        let c2 = exp(m_o - mm);
        lsum = lsum * c1 + l_o * c2;
        for (var j = 0u; j < SGV_MAX; j++) {
            if (j < sgv) { acc[j] = acc[j] * c1 + subgroupShuffleXor(acc[j], o) * c2; }
        }
        m = mm;
    }
    if (lane < SGL) {
        for (var j = 0u; j < SGV_MAX; j++) {
            if (j < sgv) {
                for (var c = 0u; c < 4u; c++) { prod[sid * HEAD_DIM + 4u * (d0 + j * SGL) + c] = acc[j][c]; }
            }
        }
        if (lane == 0u) {
            red[sid] = m;
            redu[sid] = bitcast<u32>(lsum);
        }
    }
    workgroupBarrier();
    if (li < HEAD_DIM) {
        var mx = -BIG;
        for (var q = 0u; q < WG; q++) { if (q >= nsg) { break; } mx = max(mx, red[q]); }
        var o = 0.0;
        var lt = 0.0;
        for (var q = 0u; q < WG; q++) {
            if (q >= nsg) { break; }
            let c = exp(red[q] - mx);
            o += prod[q * HEAD_DIM + li] * c;
            lt += bitcast<f32>(redu[q]) * c;
        }
        if (skip(4u)) { lt = 1.0; }
        vec_b[vb_at(li)] = o / lt;
    }
    workgroupBarrier();
}

// split: the Q|K|V step of layer l.  Workgroup w computes rows w·QR … of the joined Q|K|V matrix (QR even,
// so RoPE's adjacent pairs stay in one workgroup), rotates q and k, writes q (scaled) to Q and k, v to the
// cache at pos; the ATTN step then has only the attention and its output-projection slice to do.
// The first weight items a step loads at its start (PERSIST ≥ 2: step_load, before the previous step's gsync).
fn qkv_load(l: u32, w: u32, li: u32) -> array<u32, 10> {
    let total = (HEADS + 2u * KV_HEADS) * HEAD_DIM;
    let r0 = min(w * qkv_rows(), total);
    let n = min(qkv_rows(), total - r0) * (D / 64u);
    return load10_in(l * L_STRIDE + r0 * (D / 32u) * 5u + min(li, max(n, 1u) - 1u) * 10u, l * L_STRIDE);   // item = (row, pair): rows contiguous
}

fn attn_load(l: u32, w: u32, li: u32) -> array<u32, 15> {
    let h = w / WO_PARTS;
    let ob = HEAD_DIM / 32u;
    let orows = (D + WO_PARTS - 1u) / WO_PARTS;
    let or0 = (w % WO_PARTS) * orows;
    let n_o = min(orows, D - or0) * ob;
    let orw = (HEADS * HEAD_DIM / 32u) * 5u;
    let o_cm = (CM & 2u) != 0u;
    let ocr = select(ROW_MAJOR, or0, o_cm);
    let om = select(l * L_STRIDE + OFF_O + or0 * orw, l * L_STRIDE + OFF_O, o_cm);
    var r: array<u32, 15>;
    for (var j = 0u; j < 3u; j++) {
        let a = load5(short_addr(min(li + j * WG, n_o - 1u), om, orw, h * ob, ob, ocr));
        for (var k = 0u; k < 5u; k++) { r[5u * j + k] = a[k]; }
    }
    return r;
}

fn ffn_load(l: u32, f: u32, li: u32) -> array<u32, 30> {
    let lw = l * L_STRIDE;
    let rw = (D / 32u) * 5u;
    let rows = array<u32, 3>(lw + OFF_GATE + f * FB * rw, lw + OFF_GATE + (FFN + f * FB) * rw, 0u);
    let n_gu = 2u * FB * (D / 64u);
    let db = max(FB / 32u, 1u);
    let n_d = D * db;
    let drw = (FFN / 32u) * 5u;
    let dcr = select(ROW_MAJOR, 0u, (CM & 1u) != 0u);
    var r: array<u32, 30>;
    for (var j = 0u; j < 2u; j++) {                          // gate|up items li, li + WG, then down's
        let g = load10_in(long_base(min(li + j * WG, n_gu - 1u), rows, FB), lw + OFF_GATE);
        for (var k = 0u; k < 10u; k++) { r[10u * j + k] = g[k]; }
    }
    for (var j = 0u; j < 2u; j++) {
        let d = load5(short_addr(min(li + j * WG, n_d - 1u), lw + OFF_DOWN, drw, f * FB / 32u, db, dcr));
        for (var k = 0u; k < 5u; k++) { r[20u + 5u * j + k] = d[k]; }
    }
    return r;
}

// PERSIST ≥ 2: what step ph of workgroup w loads first, into nx / nx_nw (PERSIST 3: nx_k, nx_v): its weights,
// its norm weights and the ATTN step's first K/V items below pos (final since earlier dispatches).  Read-only
// or final data, so it may be loaded before the previous step's gsync and arrive while that barrier waits.
fn step_load(ph: u32, w: u32, pos: u32, ctx: u32, li: u32, lane: u32, sid: u32, sgs: u32) {
    let l = ph / 3u;                                         // SPLIT (ResidentTuning.check)
    let kind = (ph % 3u + 2u) % 3u;                          // 0 ATTN, 1 FFN, 2 QKV
    let i0 = min(res_idx(li, lane, sid, sgs), D / 4u - 1u);
    if (kind == 2u) {
        let a = qkv_load(l, w, li);
        for (var k = 0u; k < 10u; k++) { nx[k] = a[k]; }
        nx_nw = nw[(l * N_STRIDE) / 4u + i0];
    } else if (kind == 1u) {
        nx = ffn_load(l, w, li);
        nx_nw = nw[(l * N_STRIDE + NOFF_FFN) / 4u + i0];
    } else if (w < HEADS * WO_PARTS) {
        let a = attn_load(l, w, li);
        for (var k = 0u; k < 15u; k++) { nx[k] = a[k]; }
        if (PERSIST >= 3u) {
            let kvd4 = KV_HEADS * HEAD_DIM / 4u;
            let cache0 = l * ctx * kvd4 + (w / WO_PARTS / (HEADS / KV_HEADS)) * (HEAD_DIM / 4u);
            for (var e = 0u; e < KV_PRE; e++) {
                let tv = kv_item(e, li, lane, sid, sgs);
                if (tv.x < pos) {
                    nx_k[e] = kc[cache0 + tv.x * kvd4 + tv.y];
                    nx_v[e] = vc[cache0 + tv.x * kvd4 + tv.y];
                }
            }
        }
    }
}

fn qkv_rows() -> u32 { return (((HEADS + 2u * KV_HEADS) * HEAD_DIM + NWG - 1u) / NWG + 1u) & ~1u; }

fn qkv(l: u32, w: u32, pos_in: u32, ctx: u32, li: u32, lane: u32, sid: u32, nsg: u32, sgs: u32) {
    let total = (HEADS + 2u * KV_HEADS) * HEAD_DIM;
    let qr = qkv_rows();
    let r0 = min(w * qr, total);
    let nr = min(qr, total - r0);
    let pairs = D / 64u;
    let rw = (D / 32u) * 5u;
    let base = l * L_STRIDE + r0 * rw;
    let n = nr * pairs;
    var pre: array<u32, 10>;
    if (PERSIST >= 2u) { for (var k = 0u; k < 10u; k++) { pre[k] = nx[k]; } } else { pre = qkv_load(l, w, li); }
    var early = pos_in;                                      // GRID, l > 0: only RoPE and the KV write need it
    if (PERSIST == 0u) { early = st.pos; }
    var pos = pos_in;
    let wait_pos = l == 0u || slot_needs_pos();             // the token pick (l = 0) needs it uniform
    if (wait_pos) { pos = cur_pos(li, pos_in, l); } else { set_slot(li, pos_in, l); }
    let part = residual_in(l, pos, w, li, lane, sid, nsg, sgs);
    if (touch_on(4u)) {
        let kvd4 = KV_HEADS * HEAD_DIM / 4u;
        touch_kv(l * ctx * kvd4, select(pos, early, !wait_pos) * kvd4, w, li);
    }
    if (!wait_pos) { pos = early; }                          // arrived while the residual was read
    // This invocation's first RoPE pair, asked for now so that its latency overlaps the matvec below
    // rather than following it (like the norm weights in residual_in).
    let i_own = ((r0 + 2u * li) % HEAD_DIM) / 2u;
    var cs_own = vec2<f32>(1.0, 0.0);
    if (2u * li < nr) { cs_own = rope[pos * (ROPE_DIM / 2u) + min(i_own, ROPE_DIM / 2u - 1u)]; }
    block_sums(li, sgs);
    if (!skip(2u)) {
        if (li < n) { prod[li] = long_dot(pre, li); }
        for (var k_ = 1u; k_ < IT_MAX; k_++) { let it = li + k_ * WG; if (it >= n) { break; } prod[it] = long_dot(load10_in(base + it * 10u, l * L_STRIDE), it); }
    }
    workgroupBarrier();
    let scale = norm_scale(part, lane, nsg, sgs);
    let kvd = KV_HEADS * HEAD_DIM;
    for (var k_ = 0u; k_ < IT_MAX; k_++) {
        let j = 2u * li + k_ * (2u * WG);
        if (j >= nr) { break; }
        let row = r0 + j;                                    // even; row + 1 is its RoPE partner
        var a = row_sum(j, pairs) * scale;
        var b = row_sum(j + 1u, pairs) * scale;
        let i = (row % HEAD_DIM) / 2u;
        if (row < (HEADS + KV_HEADS) * HEAD_DIM && 2u * i < ROPE_DIM) {
            var cs = cs_own;
            if (j != 2u * li) { cs = rope[pos * (ROPE_DIM / 2u) + i]; }
            let a0 = a;
            a = a0 * cs.x - b * cs.y;
            b = a0 * cs.y + b * cs.x;
        }
        if (PERSIST != 0u) {
            stage_put(row, a);
            stage_put(row + 1u, b);
        }
        if (row < HEADS * HEAD_DIM) {
            if (PERSIST == 0u) {
                sc_set(4u * o_q() + row, a);
                sc_set(4u * o_q() + row + 1u, b);
            }
        } else if (pos < ctx) {
            let kvrow = (row - HEADS * HEAD_DIM) % kvd;
            let f = (l * ctx + pos) * kvd + kvrow;           // float index into the cache
            if (row < (HEADS + KV_HEADS) * HEAD_DIM) {
                kc[f / 4u][f % 4u] = a;
                kc[(f + 1u) / 4u][(f + 1u) % 4u] = b;
            } else {
                vc[f / 4u][f % 4u] = a;
                vc[(f + 1u) / 4u][(f + 1u) % 4u] = b;
            }
        }
    }
}

fn ffn(l: u32, f: u32, pos: u32, li: u32, lane: u32, sid: u32, nsg: u32, sgs: u32) {
    let lw = l * L_STRIDE;
    let rw = (D / 32u) * 5u;
    let rows = array<u32, 3>(lw + OFF_GATE + f * FB * rw, lw + OFF_GATE + (FFN + f * FB) * rw, 0u);
    let n_gu = 2u * FB * (D / 64u);
    let db = max(FB / 32u, 1u);                              // blocks per row of this block's Wdown slice
    let fb0 = f * FB / 32u;                                  // its first block
    let j0 = select(32u, (f * FB) % 32u, FB < 32u);          // FB < 32: its weights within that one block
    let n_d = D * db;
    let drw = (FFN / 32u) * 5u;
    let dcr = select(ROW_MAJOR, 0u, (CM & 1u) != 0u);       // the down projection's layout (short_addr)
    var pf: array<u32, 30>;
    if (PERSIST >= 2u) { pf = nx; } else { pf = ffn_load(l, f, li); }
    var pg0: array<u32, 10>;
    var pg1: array<u32, 10>;
    for (var k = 0u; k < 10u; k++) {
        pg0[k] = pf[k];
        pg1[k] = pf[10u + k];
    }
    let pd0 = array<u32, 5>(pf[20], pf[21], pf[22], pf[23], pf[24]);
    let pd1 = array<u32, 5>(pf[25], pf[26], pf[27], pf[28], pf[29]);
    set_slot(li, pos, l);

    let nb = (l * N_STRIDE + NOFF_FFN) / 4u;
    let i0 = res_idx(li, lane, sid, sgs);
    var nw0 = nx_nw;
    if (PERSIST < 2u) { nw0 = nw[nb + min(i0, D / 4u - 1u)]; }
    if (ACC == 0u) { gather(li, o_pa(), HEADS); } else { acc_fetch(acc_at(0u, p_slot), li); }
    var ss = 0.0;
    var xv = vec4<f32>(0.0);
    for (var k_ = 0u; k_ < (D / 4u + WG - 1u) / WG; k_++) {
        let i = i0 + k_ * WG;
        if (i >= D / 4u) { break; }
        var r = vec4<f32>(0.0);
        if (ACC != 0u) {
            r = acc_r4(acc_at(0u, p_slot), i);
            if (f == 0u) { acc_add4(acc_at(1u, p_slot), i, r); }
        } else {
            r = sc[o_x() + i] + partials(i, HEADS);
            if (f == 0u) { sc[o_xm() + i] = r; }
        }
        ss += dot(r, r);
        xv = r * norm_w(nb, i, i0, nw0);
        xs[xs_at(i)] = xv;
    }
    bs_shuffle(xv, i0, lane, sgs);
    if (touch_on(2u) && l + 1u < N_LAYERS) { touch_w((l + 1u) * L_STRIDE, select(OFF_O, OFF_GATE, touch_on(8u)), f, li); }
    let part = norm_end(ss, lane, sid, nsg, sgs);

    block_sums(li, sgs);
    if (!skip(16u)) { long_matvec(li, n_gu, rows, FB, pg0, pg1, lw + OFF_GATE); }
    workgroupBarrier();
    let scale = norm_scale(part, lane, nsg, sgs);
    for (var k_ = 0u; k_ < (FB + WG - 1u) / WG; k_++) {                     // gate row i and up row i: one barrier less
        let i = li + k_ * WG;
        if (i >= FB) { break; }
        let gt = row_sum(i, D / 64u) * scale;
        vec_b[vb_at(i)] = gt / (1.0 + exp(-gt)) * (row_sum(FB + i, D / 64u) * scale);
    }
    workgroupBarrier();

    // PF[f] = Wdown[:, f·FB .. +FB] · a.
    if (!skip(32u)) { short_matvec(li, n_d, lw + OFF_DOWN, drw, fb0, db, pd0, pd1, pd1, 2u, j0, dcr); }
    workgroupBarrier();
    if (ACC != 0u) {
        for (var k_ = 0u; k_ < (D + WG - 1u) / WG; k_++) { let r = li + k_ * WG; if (r >= D) { break; } acc_add(acc_at(1u, p_slot), r, row_sum(r, db)); }
    } else {
        for (var k_ = 0u; k_ < (D + WG - 1u) / WG; k_++) { let r = li + k_ * WG; if (r >= D) { break; } sc_set(4u * o_pf() + f * D + r, row_sum(r, db)); }
    }
}

@compute @workgroup_size(WG)
fn step(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_id) sid: u32,
        @builtin(num_subgroups) nsg: u32, @builtin(subgroup_size) sgs: u32,
        @builtin(num_workgroups) grid: vec3<u32>) {
    let ctx = st.ctx;                                        // issued before the counter's round trip
    let per = 2u + min(SPLIT, 1u);                           // steps per layer
    let spt = per * N_LAYERS + 1u;
    var pos = 0u;                                            // GRID: read by cur_pos once the weights are asked for
    var ph = 0u;
    if (GRID != 0u) {
        if (wg.x >= NWG || grid.x < NWG) { return; }        // the extra workgroups only carry the step number
        ph = min(grid.x - NWG, spt - 1u);
    } else {
        if (li == 0u) { w_step = atomicAdd(&st.ctr, 1u) / NWG; }
        let s = workgroupUniformLoad(&w_step);
        pos = s / spt;
        ph = s % spt;
    }
    if (ph == per * N_LAYERS) {                              // FINAL
        if (wg.x == 0u) {
            let p = cur_pos(li, pos, N_LAYERS - 1u);
            if (!skip(512u)) {
                if (ACC != 0u) {
                    for (var k_ = 0u; k_ < (D / 4u + WG - 1u) / WG; k_++) { let i = li + k_ * WG; if (i >= D / 4u) { break; } sc[o_xf() + i] = acc_get4(acc_at(1u, p_slot), i); }
                } else {
                    gather(li, o_pf(), NWG);
                    for (var k_ = 0u; k_ < (D / 4u + WG - 1u) / WG; k_++) { let i = li + k_ * WG; if (i >= D / 4u) { break; } sc[o_xf() + i] = sc[o_xm() + i] + partials(i, NWG); }
                }
            }
            if (GRID != 0u && li == 0u) { st.pos = p + 1u; }  // no other workgroup of FINAL reads it
        }
        return;
    }
    layer_step(ph, wg.x, pos, ctx, li, lane, sid, nsg, sgs);
}

// Step ph (< per · N_LAYERS, not FINAL) of a token for workgroup w.
fn layer_step(ph: u32, w: u32, pos: u32, ctx: u32, li: u32, lane: u32, sid: u32, nsg: u32, sgs: u32) {
    let per = 2u + min(SPLIT, 1u);
    let l = ph / per;
    var kind = ph % per;                                     // 0 ATTN, 1 FFN, 2 QKV (split: QKV, ATTN, FFN)
    if (SPLIT != 0u) { kind = (kind + 2u) % 3u; }
    if (kind == 2u) {
        if (!skip(64u)) { qkv(l, w, pos, ctx, li, lane, sid, nsg, sgs); }
    } else if (kind == 0u) {
        if (w < HEADS * WO_PARTS && !skip(64u)) {
            attn(l, w, pos, ctx, li, lane, sid, nsg, sgs);
        } else if (touch_on(1u)) {
            touch_ffn(l, w, li);
        }
    } else if (!skip(128u)) {
        ffn(l, w, pos, li, lane, sid, nsg, sgs);
    }
    // ACC: the first step of a layer zeroes the other RA slot (read by the FFN step just before), the second
    // the other RF slot (read by the first step just before).
    if (ACC != 0u && ph % per < 2u && w == NWG - 1u) {
        set_slot(li, pos, l);
        acc_zero(acc_at(ph % per, 1u - p_slot), li);
    }
    touch_keep();
}

// PERSIST = 1 (ResidentTuning.persist): one dispatch per token of NWG workgroups (NWG + 1 with the head; the
// extra one returns at once), which run every layer step of the token in turn with a grid barrier (gsync)
// between, then (with the head) the head's HEAD_GROUPS groups, NWG at a time, from the last RF accumulator.  The
// position is st.pos, read once at the start; workgroup 0 advances it at the end (no FINAL step).
@compute @workgroup_size(WG)
fn persist(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
           @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_id) sid: u32,
           @builtin(num_subgroups) nsg: u32, @builtin(subgroup_size) sgs: u32,
           @builtin(num_workgroups) grid: vec3<u32>) {
    if (wg.x >= NWG) { return; }
    let ctx = st.ctx;
    if (li == 0u) { w_pos = st.pos; }
    let pos = workgroupUniformLoad(&w_pos);
    let steps = (2u + min(SPLIT, 1u)) * N_LAYERS;
    if (PERSIST >= 2u) { step_load(0u, wg.x, pos, ctx, li, lane, sid, sgs); }
    var pre: array<u32, 18>;                                 // PERSIST ≥ 2: the head's first item
    for (var ph = 0u; ph < (2u + min(SPLIT, 1u)) * N_LAYERS; ph++) {
        layer_step(ph, wg.x, pos, ctx, li, lane, sid, nsg, sgs);
        if (PERSIST >= 2u) {
            if (ph + 1u < steps) {
                step_load(ph + 1u, wg.x, pos, ctx, li, lane, sid, sgs);
            } else if (grid.x > NWG) {
                let it0 = min(li, HEAD_ROWS * (D / 64u) - 1u);
                pre = q80_load(min(wg.x * HEAD_ROWS + it0 / (D / 64u), VOCAB - 1u), it0 % (D / 64u));
            }
        }
        gsync((pos * steps + ph + 1u) * NWG, li);
    }
    if (grid.x > NWG) {
        let part = head_in(acc_at(1u, (pos * N_LAYERS + N_LAYERS - 1u) % 2u), li, lane, sid, nsg, sgs);
        for (var k_ = 0u; k_ < (HEAD_GROUPS + NWG - 1u) / NWG; k_++) {
            let g = wg.x + k_ * NWG;
            if (g >= HEAD_GROUPS) { break; }
            head_group(g, part, pre, PERSIST >= 2u && g == wg.x, li, lane, sid, nsg, sgs);
        }
    }
    if (wg.x == 0u && li == 0u) { st.pos = pos + 1u; }       // nothing in this dispatch reads it again
}

@compute @workgroup_size(WG)
fn head(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_id) sid: u32,
        @builtin(num_subgroups) nsg: u32, @builtin(subgroup_size) sgs: u32) {
    if (FOLD != 0u && wg.x == 0u && li == 0u) { st.pos += 1u; }   // FINAL's job; nothing else here reads it
    var pre: array<u32, 18>;
    if (HPRE != 0u && !skip(256u)) {
        let it0 = min(li, HEAD_ROWS * (D / 64u) - 1u);
        pre = q80_load(min(wg.x * HEAD_ROWS + it0 / (D / 64u), VOCAB - 1u), it0 % (D / 64u));
    }
    let rf = acc_at(1u, (N_LAYERS - 1u) % 2u);               // FOLD (grid, even N_LAYERS): the last layer's RF
    var part = 0.0;
    if (!skip(256u)) { part = head_in(select(0xffffffffu, rf, FOLD != 0u), li, lane, sid, nsg, sgs); }
    head_group(wg.x, part, pre, HPRE != 0u, li, lane, sid, nsg, sgs);
}

// The head's input: xs = r ∘ output_norm, r from accumulator rf (0xffffffff: XF); returns rmsnorm's scale
// (DN: 0, the partials in red_n).
fn head_in(rf: u32, li: u32, lane: u32, sid: u32, nsg: u32, sgs: u32) -> f32 {
    let from_acc = rf != 0xffffffffu;
    let nw0 = nw[NOFF_OUT / 4u + min(li, D / 4u - 1u)];
    if (from_acc) { acc_fetch(rf, li); }
    var ss = 0.0;
    for (var k_ = 0u; k_ < (D / 4u + WG - 1u) / WG; k_++) {
        let i = li + k_ * WG;
        if (i >= D / 4u) { break; }
        var r: vec4<f32>;
        if (from_acc) { r = acc_r4(rf, i); } else { r = sc[o_xf() + i]; }
        ss += dot(r, r);
        xs[xs_at(i)] = r * norm_w(NOFF_OUT / 4u, i, li, nw0);
    }
    let part = norm_end(ss, lane, sid, nsg, sgs);
    if (dn_on(1u)) { workgroupBarrier(); }                   // xs (wg_sum's barrier did it)
    return part;
}

// Head group g: logits of rows g·HEAD_ROWS .. + HEAD_ROWS from xs; HP[g] = (max, lowest index).  pre: the first
// item's words when use_pre (HPRE).
fn head_group(g: u32, part: f32, pre: array<u32, 18>, use_pre: bool, li: u32, lane: u32, sid: u32, nsg: u32,
              sgs: u32) {
    if (skip(256u)) {
        if (li == 0u) {
            sc_set(4u * o_hp() + 2u * g, 0.0);
            sc_set(4u * o_hp() + 2u * g + 1u, bitcast<f32>(300u));
        }
        return;
    }
    let row0 = g * HEAD_ROWS;
    let pairs = D / 64u;
    let n_it = HEAD_ROWS * pairs;
    for (var k_ = 0u; k_ < (HEAD_ROWS * (D / 64u) + WG - 1u) / WG; k_++) {
        let it = li + k_ * WG;
        if (it >= n_it) { break; }
        if (use_pre && it == li) {
            prod[it] = q80_dot(pre, it % pairs);
        } else {
            prod[it] = q80_pair(min(row0 + it / pairs, VOCAB - 1u), it % pairs);
        }
    }
    workgroupBarrier();
    let scale = norm_scale(part, lane, nsg, sgs);
    var v = -BIG;
    var idx = 0xffffffffu;
    for (var k_ = 0u; k_ < (HEAD_ROWS + WG - 1u) / WG; k_++) {              // rows in increasing order: > keeps the lowest
        let r = li + k_ * WG;
        if (r >= HEAD_ROWS) { break; }
        let row = row0 + r;
        if (row < VOCAB) {
            let x = row_sum(r, pairs) * scale;
            if (x > v) {                                     // false for NaN: NaN never wins
                v = x;
                idx = row;
            }
        }
    }
    let top = wg_max(v, lane, sid, nsg, sgs);
    let best = wg_min_u(select(0xffffffffu, idx, v == top), lane, sid, nsg, sgs);
    if (li == 0u) {
        sc_set(4u * o_hp() + 2u * g, top);
        sc_set(4u * o_hp() + 2u * g + 1u, bitcast<f32>(best));
    }
}

@compute @workgroup_size(WG)
fn tail(@builtin(local_invocation_index) li: u32, @builtin(subgroup_invocation_id) lane: u32,
        @builtin(subgroup_id) sid: u32, @builtin(num_subgroups) nsg: u32, @builtin(subgroup_size) sgs: u32) {
    let token = parts_argmax(li, lane, sid, nsg, sgs);
    if (li == 0u) {
        var pos = st.pos;                                    // tokens computed so far
        if (GRID == 0u) { pos = atomicLoad(&st.ctr) / NWG / ((2u + min(SPLIT, 1u)) * N_LAYERS + 1u); }
        atomicStore(&st.tokens[tok0() + pos], mark_failed(token));
    }
}
