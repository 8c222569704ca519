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
// Every partial is summed in a fixed order: the result does not depend on scheduling.
//
// Matrices are the GGUF bytes as stored.  Q4_1 blocks (W): 20 bytes = 5 u32 (f16 d | f16 m, then 16 bytes
// of nibbles: weight j < 16 = low nibble of byte j, j + 16 = high nibble; w = d·q + m).  Q8_0 (E): 34-byte
// blocks (f16 d, 32 × int8; w = d·q), read in pairs (68 bytes = 17 u32, word aligned since D % 64 = 0).
// A matvec work item is one row × two blocks; rmsnorm's scale is applied per row after the dot
// products, so the dots never wait for the norm's reduction.
//
// Bindings (group 0):
//   0  storage, read_write  State             st      { ctr (atomic), prompt_len, ctx, pad, tokens[ctx + 1] }
//   1  storage, read        array<u32>        W       every layer's Q4_1 matrices: layer l at l·L_STRIDE words,
//                                                     q|k|v at 0, o at OFF_O, gate|up at OFF_GATE, down at OFF_DOWN
//   2  storage, read        array<f32>        nw      norms: attn_norm(l) at l·N_STRIDE, ffn_norm(l) at
//                                                     l·N_STRIDE + NOFF_FFN, output_norm at NOFF_OUT
//   3  storage, read        array<u32>        E       token embedding = tied output head, Q8_0
//   4  storage, read        array<vec2<f32>>  rope    ctx · ROPE_DIM/2 (cos, sin)
//   5  storage, read_write  array<vec4<f32>>  kc      N_LAYERS · ctx · KV_HEADS·HEAD_DIM / 4
//   6  storage, read_write  array<f32>        vc      N_LAYERS · ctx · KV_HEADS·HEAD_DIM
//   7  storage, read_write  array<f32>        sc      X | XM | XF (D each) | PA (HEADS·D) | PF (NWG·D) | HP (2·HEAD_GROUPS)
// Dispatch: step (NWG, 1, 1); head (HEAD_GROUPS, 1, 1); tail (1, 1, 1).
// Overrides: model shape (D multiple of 64, HEADS, KV_HEADS, HEAD_DIM multiple of 32, ROPE_DIM, FFN, N_LAYERS,
//   VOCAB, EPS), NWG = FFN / FB (≥ HEADS), FB (multiple of 32), WG (multiple of 64, ≥ HEAD_DIM), HEAD_ROWS
//   (rows per head workgroup), HEAD_GROUPS = ceil(VOCAB / HEAD_ROWS), PROD (see prod), layout offsets
//   (u32 / f32 words).  Needs subgroups at least 4 wide.
enable subgroups;

struct State {
    ctr: atomic<u32>,
    prompt_len: u32,
    ctx: u32,
    pad: u32,
    tokens: array<u32>,
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
override PROD: u32;                                          // ≥ WG and ≥ every matvec's item count
override L_STRIDE: u32;
override OFF_O: u32;
override OFF_GATE: u32;
override OFF_DOWN: u32;
override N_STRIDE: u32;
override NOFF_FFN: u32;
override NOFF_OUT: u32;

@group(0) @binding(0) var<storage, read_write> st: State;
@group(0) @binding(1) var<storage, read> W: array<u32>;
@group(0) @binding(2) var<storage, read> nw: array<f32>;
@group(0) @binding(3) var<storage, read> E: array<u32>;
@group(0) @binding(4) var<storage, read> rope: array<vec2<f32>>;
@group(0) @binding(5) var<storage, read_write> kc: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> vc: array<f32>;
@group(0) @binding(7) var<storage, read_write> sc: array<f32>;

const BIG: f32 = 3.4028234e38;

var<workgroup> xs: array<vec4<f32>, D / 4u>;             // r ∘ norm weight (unnormalized)
var<workgroup> prod: array<f32, PROD>;                    // per-item dot products; attention·V partials
var<workgroup> vec_a: array<f32, 3u * HEAD_DIM>;          // q_h | k_g | v_g, then gate | up
var<workgroup> vec_b: array<f32, WG>;                     // attention probabilities of a chunk; o_h; a
var<workgroup> red: array<f32, WG / 4u>;                  // one partial per subgroup (subgroups ≥ 4 wide)
var<workgroup> redu: array<u32, WG / 4u>;
var<workgroup> w_step: u32;                               // broadcast slots (workgroupUniformLoad), one
var<workgroup> w_plen: u32;                               // per value so that no slot is rewritten
var<workgroup> w_tok: u32;                                // while another invocation may still read it

// Scratch offsets (floats).
fn o_x() -> u32 { return 0u; }
fn o_xm() -> u32 { return D; }
fn o_xf() -> u32 { return 2u * D; }
fn o_pa() -> u32 { return 3u * D; }
fn o_pf() -> u32 { return 3u * D + HEADS * D; }
fn o_hp() -> u32 { return 3u * D + HEADS * D + NWG * D; }

// Sum / max / min over the workgroup: subgroup reduction, then the subgroups' results in a fixed order.
fn wg_sum(v: f32, lane: u32, sid: u32, nsg: u32) -> f32 {
    let s = subgroupAdd(v);
    if (lane == 0u) { red[sid] = s; }
    workgroupBarrier();
    var r = red[0];
    for (var i = 1u; i < nsg; i++) { r += red[i]; }
    workgroupBarrier();
    return r;
}

fn wg_max(v: f32, lane: u32, sid: u32, nsg: u32) -> f32 {
    let s = subgroupMax(v);
    if (lane == 0u) { red[sid] = s; }
    workgroupBarrier();
    var r = red[0];
    for (var i = 1u; i < nsg; i++) { r = max(r, red[i]); }
    workgroupBarrier();
    return r;
}

fn wg_min_u(v: u32, lane: u32, sid: u32, nsg: u32) -> u32 {
    let s = subgroupMin(v);
    if (lane == 0u) { redu[sid] = s; }
    workgroupBarrier();
    var r = redu[0];
    for (var i = 1u; i < nsg; i++) { r = min(r, redu[i]); }
    workgroupBarrier();
    return r;
}

// Σ over one Q4_1 block (5 words at W[base]) of w·xs, the block covering xs[xb·8 .. xb·8 + 8].
fn q41_block(base: u32, xb: u32) -> f32 {
    let w = vec4<u32>(W[base + 1u], W[base + 2u], W[base + 3u], W[base + 4u]);
    var qx = 0.0;
    var sx = vec4<f32>(0.0);
    for (var q = 0u; q < 4u; q++) {
        let xl = xs[xb * 8u + q];
        let xh = xs[xb * 8u + 4u + q];
        let wq = vec4<u32>(w[q]);
        qx += dot(vec4<f32>((wq >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(15u)), xl)
            + dot(vec4<f32>((wq >> vec4<u32>(4u, 12u, 20u, 28u)) & vec4<u32>(15u)), xh);
        sx += xl + xh;
    }
    let dm = unpack2x16float(W[base]);
    return dm.x * qx + dm.y * (sx.x + sx.y + sx.z + sx.w);
}

// Same, the vector taken from vec_b[vb·32 ..] (the short matvecs: o projection, down projection).
fn q41_block_b(base: u32, vb: u32) -> f32 {
    var qx = 0.0;
    var sx = 0.0;
    for (var q = 0u; q < 4u; q++) {
        let wq = W[base + 1u + q];
        for (var j = 0u; j < 4u; j++) {
            let lo = vec_b[vb * 32u + 4u * q + j];
            let hi = vec_b[vb * 32u + 16u + 4u * q + j];
            qx += f32((wq >> (8u * j)) & 15u) * lo + f32((wq >> (8u * j + 4u)) & 15u) * hi;
            sx += lo + hi;
        }
    }
    let dm = unpack2x16float(W[base]);
    return dm.x * qx + dm.y * sx;
}

// prod[it] for items it = li, li + WG, … < rows·(D/64): item = (row r, block pair p) of the rows
// first_row(r) of a D-column Q4_1 matrix at word offset mat.  rowsel maps local rows to matrix rows.
fn matvec_items(li: u32, n_items: u32, row_word: array<u32, 3>, seg: u32) {
    let pairs = D / 64u;
    for (var it = li; it < n_items; it += WG) {
        let r = it / pairs;
        let p = it % pairs;
        let part = min(r / seg, 2u);
        let rw = row_word[part] + (r % seg) * (D / 32u) * 5u;
        prod[it] = q41_block(rw + 2u * p * 5u, 2u * p) + q41_block(rw + (2u * p + 1u) * 5u, 2u * p + 1u);
    }
}

fn row_sum(r: u32) -> f32 {
    let pairs = D / 64u;
    var s = 0.0;
    for (var p = 0u; p < pairs; p++) { s += prod[r * pairs + p]; }
    return s;
}

// Q8_0 pair p (blocks 2p, 2p + 1) of row `row` of E · xs.
fn q80_pair(row: u32, p: u32) -> f32 {
    let b = (row * (D / 64u) + p) * 17u;
    var s0 = 0.0;
    var s1 = 0.0;
    var lo = E[b];
    for (var i = 0u; i < 8u; i++) {
        let hi = E[b + i + 1u];
        let q0 = vec4<f32>(bitcast<vec4<i32>>(vec4<u32>((lo >> 16u) | (hi << 16u)) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
        let q1 = vec4<f32>(bitcast<vec4<i32>>(vec4<u32>(E[b + 9u + i]) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
        s0 += dot(q0, xs[p * 16u + i]);
        s1 += dot(q1, xs[p * 16u + 8u + i]);
        lo = hi;
    }
    return unpack2x16float(E[b]).x * s0 + unpack2x16float(E[b + 8u]).y * s1;
}

// Embedding row of `token`, element i (Q8_0 blocks read by byte offset).
fn embed_at(token: u32, i: u32) -> f32 {
    let blk = (token * (D / 32u) + i / 32u) * 34u;
    let d = unpack2x16float(E[blk >> 2u])[(blk >> 1u) & 1u];
    let o = blk + 2u + i % 32u;
    let q = bitcast<i32>(((E[o >> 2u] >> ((o & 3u) * 8u)) & 0xffu) << 24u) >> 24u;
    return d * f32(q);
}

// argmax over the head's parts HP (value, index): lowest index among equal maxima.
fn parts_argmax(li: u32, lane: u32, sid: u32, nsg: u32) -> u32 {
    var v = -BIG;
    var idx = 0xffffffffu;
    for (var i = li; i < HEAD_GROUPS; i += WG) {
        let pv = sc[o_hp() + 2u * i];
        let pi = bitcast<u32>(sc[o_hp() + 2u * i + 1u]);
        if (pv > v || (pv == v && pi < idx)) {
            v = pv;
            idx = pi;
        }
    }
    let top = wg_max(v, lane, sid, nsg);
    return wg_min_u(select(0xffffffffu, idx, v == top), lane, sid, nsg);
}

fn attn(l: u32, h: u32, pos: u32, li: u32, lane: u32, sid: u32, nsg: u32) {
    let g = h / (HEADS / KV_HEADS);
    let kvd = KV_HEADS * HEAD_DIM;
    let lw = l * L_STRIDE;
    let ctx = st.ctx;

    // r = residual entering layer l; xs = r ∘ attn_norm; ss = Σ r².
    let tok_phase = l == 0u;
    var token = 0u;
    if (tok_phase) {
        if (li == 0u) { w_plen = st.prompt_len; }
        let plen = workgroupUniformLoad(&w_plen);
        if (pos < plen) {
            if (li == 0u) { w_tok = st.tokens[pos]; }
            token = workgroupUniformLoad(&w_tok);
        } else {
            token = parts_argmax(li, lane, sid, nsg);
            if (h == 0u && li == 0u) { st.tokens[pos] = token; }
        }
    }
    var ss = 0.0;
    for (var i = li; i < D; i += WG) {
        var r = 0.0;
        if (tok_phase) {
            r = embed_at(token, i);
        } else {
            r = sc[o_xm() + i];
            for (var f = 0u; f < NWG; f++) { r += sc[o_pf() + f * D + i]; }
        }
        if (h == 0u) { sc[o_x() + i] = r; }
        ss += r * r;
        xs[i / 4u][i % 4u] = r * nw[l * N_STRIDE + i];
    }
    let scale = 1.0 / sqrt(wg_sum(ss, lane, sid, nsg) / f32(D) + EPS);   // its barrier publishes xs

    // q_h | k_g | v_g (3·HEAD_DIM rows of the joined Q|K|V matrix).
    let rw = (D / 32u) * 5u;
    let rows = array<u32, 3>(lw + h * HEAD_DIM * rw, lw + (HEADS + g) * HEAD_DIM * rw,
                             lw + (HEADS + KV_HEADS + g) * HEAD_DIM * rw);
    matvec_items(li, 3u * HEAD_DIM * (D / 64u), rows, HEAD_DIM);
    workgroupBarrier();
    for (var r = li; r < 3u * HEAD_DIM; r += WG) { vec_a[r] = row_sum(r) * scale; }
    workgroupBarrier();

    // RoPE (NORM mode: adjacent pairs) on q_h and k_g, in place.
    let half = HEAD_DIM / 2u;
    for (var p = li; p < 2u * half; p += WG) {
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
    let cache0 = l * ctx * kvd + g * HEAD_DIM;             // float offset of (l, position 0, group g)
    if (h % (HEADS / KV_HEADS) == 0u && pos < ctx) {
        for (var j = li; j < HEAD_DIM / 4u; j += WG) {
            let k = HEAD_DIM + 4u * j;
            kc[(cache0 + pos * kvd) / 4u + j] = vec4<f32>(vec_a[k], vec_a[k + 1u], vec_a[k + 2u], vec_a[k + 3u]);
        }
        for (var dd = li; dd < HEAD_DIM; dd += WG) { vc[cache0 + pos * kvd + dd] = vec_a[2u * HEAD_DIM + dd]; }
    }

    // o_h = softmax(q·K / √HEAD_DIM) · V over positions 0..pos, in chunks of WG positions.
    let n = pos + 1u;
    let inv = 1.0 / sqrt(f32(HEAD_DIM));
    let parts = WG / HEAD_DIM;                              // invocations per output dim in P·V
    let dd = li % HEAD_DIM;
    let tp = li / HEAD_DIM;
    var m_run = -BIG;
    var l_run = 0.0;
    var acc = 0.0;
    for (var c0 = 0u; c0 < n; c0 += WG) {
        let t = c0 + li;
        var s = -BIG;
        if (t < n) {
            s = 0.0;
            if (t == pos) {
                for (var j = 0u; j < HEAD_DIM; j++) { s += vec_a[j] * vec_a[HEAD_DIM + j]; }
            } else {
                let k0 = (cache0 + t * kvd) / 4u;
                for (var j = 0u; j < HEAD_DIM / 4u; j++) {
                    s += dot(vec4<f32>(vec_a[4u * j], vec_a[4u * j + 1u], vec_a[4u * j + 2u], vec_a[4u * j + 3u]),
                             kc[k0 + j]);
                }
            }
            s *= inv;
        }
        let m_new = max(m_run, wg_max(s, lane, sid, nsg));
        var e = 0.0;
        if (t < n) { e = exp(s - m_new); }
        vec_b[li] = e;
        let corr = exp(m_run - m_new);
        l_run = l_run * corr + wg_sum(e, lane, sid, nsg);   // its barriers publish vec_b
        acc *= corr;
        let len = min(WG, n - c0);
        for (var u = tp; u < len; u += parts) {
            let tt = c0 + u;
            var v = vec_a[2u * HEAD_DIM + dd];
            if (tt != pos) { v = vc[cache0 + tt * kvd + dd]; }
            acc += vec_b[u] * v;
        }
        m_run = m_new;
        workgroupBarrier();                                  // vec_b is rewritten by the next chunk
    }
    prod[li] = acc;
    workgroupBarrier();
    if (li < HEAD_DIM) {
        var o = 0.0;
        for (var q = 0u; q < parts; q++) { o += prod[q * HEAD_DIM + li]; }
        vec_b[li] = o / l_run;
    }
    workgroupBarrier();

    // PA[h] = Wo[:, h·HEAD_DIM .. +HEAD_DIM] · o_h  (HEAD_DIM / 32 blocks per row).
    let ow = (HEADS * HEAD_DIM / 32u) * 5u;                 // words per row of Wo
    for (var r = li; r < D; r += WG) {
        var s = 0.0;
        for (var b = 0u; b < HEAD_DIM / 32u; b++) {
            s += q41_block_b(lw + OFF_O + r * ow + (h * HEAD_DIM / 32u + b) * 5u, b);
        }
        sc[o_pa() + h * D + r] = s;
    }
}

fn ffn(l: u32, f: u32, li: u32, lane: u32, sid: u32, nsg: u32) {
    let lw = l * L_STRIDE;
    var ss = 0.0;
    for (var i = li; i < D; i += WG) {
        var r = sc[o_x() + i];
        for (var h = 0u; h < HEADS; h++) { r += sc[o_pa() + h * D + i]; }
        if (f == 0u) { sc[o_xm() + i] = r; }
        ss += r * r;
        xs[i / 4u][i % 4u] = r * nw[l * N_STRIDE + NOFF_FFN + i];
    }
    let scale = 1.0 / sqrt(wg_sum(ss, lane, sid, nsg) / f32(D) + EPS);

    let rw = (D / 32u) * 5u;
    let rows = array<u32, 3>(lw + OFF_GATE + f * FB * rw, lw + OFF_GATE + (FFN + f * FB) * rw, 0u);
    matvec_items(li, 2u * FB * (D / 64u), rows, FB);
    workgroupBarrier();
    for (var r = li; r < 2u * FB; r += WG) { vec_a[r] = row_sum(r) * scale; }
    workgroupBarrier();
    for (var i = li; i < FB; i += WG) {
        let gt = vec_a[i];
        vec_b[i] = gt / (1.0 + exp(-gt)) * vec_a[FB + i];
    }
    workgroupBarrier();

    // PF[f] = Wdown[:, f·FB .. +FB] · a  (FB / 32 blocks per row).
    let dw = (FFN / 32u) * 5u;
    for (var r = li; r < D; r += WG) {
        var s = 0.0;
        for (var b = 0u; b < FB / 32u; b++) {
            s += q41_block_b(lw + OFF_DOWN + r * dw + (f * FB / 32u + b) * 5u, b);
        }
        sc[o_pf() + f * D + r] = s;
    }
}

@compute @workgroup_size(WG)
fn step(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_id) sid: u32,
        @builtin(num_subgroups) nsg: u32) {
    if (li == 0u) { w_step = atomicAdd(&st.ctr, 1u) / NWG; }
    let s = workgroupUniformLoad(&w_step);
    let spt = 2u * N_LAYERS + 1u;
    let pos = s / spt;
    let ph = s % spt;
    if (ph == 2u * N_LAYERS) {                               // FINAL
        if (wg.x == 0u) {
            for (var i = li; i < D; i += WG) {
                var r = sc[o_xm() + i];
                for (var f = 0u; f < NWG; f++) { r += sc[o_pf() + f * D + i]; }
                sc[o_xf() + i] = r;
            }
        }
    } else if (ph % 2u == 0u) {
        if (wg.x < HEADS) { attn(ph / 2u, wg.x, pos, li, lane, sid, nsg); }
    } else {
        ffn(ph / 2u, wg.x, li, lane, sid, nsg);
    }
}

@compute @workgroup_size(WG)
fn head(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_id) sid: u32,
        @builtin(num_subgroups) nsg: u32) {
    var ss = 0.0;
    for (var i = li; i < D; i += WG) {
        let r = sc[o_xf() + i];
        ss += r * r;
        xs[i / 4u][i % 4u] = r * nw[NOFF_OUT + i];
    }
    let scale = 1.0 / sqrt(wg_sum(ss, lane, sid, nsg) / f32(D) + EPS);
    let row0 = wg.x * HEAD_ROWS;
    let pairs = D / 64u;
    for (var it = li; it < HEAD_ROWS * pairs; it += WG) {
        prod[it] = q80_pair(min(row0 + it / pairs, VOCAB - 1u), it % pairs);
    }
    workgroupBarrier();
    var v = -BIG;
    var idx = 0xffffffffu;
    for (var r = li; r < HEAD_ROWS; r += WG) {              // rows in increasing order: > keeps the lowest
        let row = row0 + r;
        if (row < VOCAB) {
            let x = row_sum(r) * scale;
            if (x > v) {                                     // false for NaN: NaN never wins
                v = x;
                idx = row;
            }
        }
    }
    let top = wg_max(v, lane, sid, nsg);
    let best = wg_min_u(select(0xffffffffu, idx, v == top), lane, sid, nsg);
    if (li == 0u) {
        sc[o_hp() + 2u * wg.x] = top;
        sc[o_hp() + 2u * wg.x + 1u] = bitcast<f32>(best);
    }
}

@compute @workgroup_size(WG)
fn tail(@builtin(local_invocation_index) li: u32, @builtin(subgroup_invocation_id) lane: u32,
        @builtin(subgroup_id) sid: u32, @builtin(num_subgroups) nsg: u32) {
    let token = parts_argmax(li, lane, sid, nsg);
    if (li == 0u) {
        let pos = atomicLoad(&st.ctr) / NWG / (2u * N_LAYERS + 1u);   // tokens computed so far
        st.tokens[pos] = token;
    }
}
