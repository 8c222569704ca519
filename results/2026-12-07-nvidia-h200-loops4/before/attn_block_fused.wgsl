// attn_block_fused.wgsl — the attention half of a llama layer up to the output projection, in ONE
// dispatch: one workgroup per query head h (kv head g = h / (HEADS / KV_HEADS)), position p = step.pos:
//   xn   = rmsnorm(x) · attn_norm                                  (every workgroup, D floats: cheap)
//   q_h  = Wq[h]·xn,  k_g = Wk[g]·xn,  v_g = Wv[g]·xn               (3·HEAD_DIM rows of the Q|K|V matrix)
//   q_h, k_g = rope(·, p)  (NORM mode: adjacent pairs, cos/sin from the float64-built table)
//   K[p, g] = k_g, V[p, g] = v_g                                   (written by the group's first head only)
//   out_h = softmax(q_h · K[0..p, g] / sqrt(HEAD_DIM)) · V[0..p, g]
// Position p's own k/v come from workgroup memory, earlier positions from the cache, so the heads of a
// group never read what another workgroup of this dispatch writes.  Replaces rmsnorm, 3 matvecs, 2 ropes,
// kv_write and attention of the per-op plan (8 dispatches → 1).
//
// Q|K|V is ONE Q4_1 matrix: (HEADS + 2·KV_HEADS)·HEAD_DIM rows of D/32 blocks (20 bytes = 5 u32:
// f16 d | f16 m, then 16 nibble bytes, weight j < 16 = low nibble of byte j, j + 16 = high; w = d·q + m).
// TPR invocations of one subgroup share a row: they split it into work items of QPI nibble words and meet in a
// subgroupShuffleXor butterfly (no workgroup barrier per row).  TPR = 1 suits CPU adapters, 16..32
// GPUs; TPR divides the subgroup size.
//
// Bindings (group 0):
//   0  uniform (dynamic offset)  Step              { pos, slot }
//   1  storage, read             array<vec4<f32>>  x      D/4
//   2  storage, read             array<vec4<f32>>  nw     D/4            attn_norm weight
//   3  storage, read             array<u32>        W      (HEADS + 2·KV_HEADS)·HEAD_DIM · D/32 · 5
//   4  storage, read             array<vec2<f32>>  rope   ctx · ROPE_DIM/2  (cos, sin)
//   5  storage, read_write       array<vec4<f32>>  kc     ctx · KV_HEADS·HEAD_DIM/4 this layer's K cache
//   6  storage, read_write       array<f32>        vc     ctx · KV_HEADS·HEAD_DIM   this layer's V cache
//   7  storage, read_write       array<f32>        att    HEADS · L   score scratch (row stride L = length / HEADS)
//   8  storage, read_write       array<f32>        out    HEADS·HEAD_DIM
// Dispatch: (HEADS, 1, 1).
// Overrides: D (multiple of 32), HEADS, KV_HEADS, HEAD_DIM (multiple of 4), ROPE_DIM, EPS, TPR, QPI, WG,
//   PACC = max(WG, HEAD_DIM) (size of the attention·V partial sums).
enable subgroups;

struct Step {
    pos: u32,
    slot: u32,
}

override D: u32;
override HEADS: u32;
override KV_HEADS: u32;
override HEAD_DIM: u32;
override ROPE_DIM: u32;
override EPS: f32 = 1e-5;
override TPR: u32 = 1u;
override QPI: u32 = 4u;
override WG: u32 = 64u;
override PACC: u32 = 64u;

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> nw: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> W: array<u32>;
@group(0) @binding(4) var<storage, read> rope: array<vec2<f32>>;
@group(0) @binding(5) var<storage, read_write> kc: array<vec4<f32>>;   // vec4: a score reads its key in 16 loads
@group(0) @binding(6) var<storage, read_write> vc: array<f32>;
@group(0) @binding(7) var<storage, read_write> att: array<f32>;
@group(0) @binding(8) var<storage, read_write> out: array<f32>;

var<workgroup> xs: array<vec4<f32>, D / 4u>;       // normalized input
var<workgroup> qkv: array<f32, 3u * HEAD_DIM>;      // q_h | k_g | v_g
var<workgroup> red: array<f32, WG>;                 // one partial per subgroup
var<workgroup> pacc: array<f32, PACC>;              // attention·V partial sums

// d·(q·x) + m·Σx for one u32 of nibbles (weights c..c+3 from low nibbles, c+16..c+19 from high).
// This invocation's share of one row · x: work items of QPI nibble words (8·QPI weights; QPI = 4 is a
// whole block), items part, part + TPR, …  (the caller sums the TPR shares).
fn row_part(row: u32, part: u32) -> f32 {
    let nb = D / 32u;
    let per = 4u / QPI;
    var acc = 0.0;
    for (var it = part; it < nb * per; it += TPR) {
        let b = it / per;
        let base = (row * nb + b) * 5u;
        let q0 = (it % per) * QPI;
        var qx = 0.0;
        var sx = vec4<f32>(0.0);
        for (var j = 0u; j < QPI; j++) {            // constant trip count: unrolled
            let q = q0 + j;
            let w = vec4<u32>(W[base + 1u + q]);
            let xl = xs[b * 8u + q];
            let xh = xs[b * 8u + 4u + q];
            qx += dot(vec4<f32>((w >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(15u)), xl)
                + dot(vec4<f32>((w >> vec4<u32>(4u, 12u, 20u, 28u)) & vec4<u32>(15u)), xh);
            sx += xl + xh;
        }
        let dm = unpack2x16float(W[base]);
        acc += dm.x * qx + dm.y * (sx.x + sx.y + sx.z + sx.w);
    }
    return acc;
}

// Sum (or max) over the workgroup: subgroup reduction, then the subgroups' results in a fixed order.
fn wg_reduce(v: f32, is_max: bool, sid: u32, lane: u32, nsg: u32) -> f32 {
    let s = select(subgroupAdd(v), subgroupMax(v), is_max);
    if (lane == 0u) {
        red[sid] = s;
    }
    workgroupBarrier();
    var r = red[0];
    for (var i = 1u; i < nsg; i++) {
        r = select(r + red[i], max(r, red[i]), is_max);
    }
    workgroupBarrier();   // red[] is reused by the next reduction
    return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sgs: u32,
        @builtin(subgroup_id) sid: u32, @builtin(num_subgroups) nsg: u32) {
    let h = wg.x;
    let g = h / (HEADS / KV_HEADS);
    let pos = step.pos;
    let d4 = D / 4u;

    // xn = rmsnorm(x) · nw, kept in workgroup memory.
    var ss = 0.0;
    for (var i = li; i < d4; i += WG) {
        let v = x[i];
        xs[i] = v;
        ss += dot(v, v);
    }
    let scale = 1.0 / sqrt(wg_reduce(ss, false, sid, lane, nsg) / f32(D) + EPS);
    for (var i = li; i < d4; i += WG) {
        xs[i] = (xs[i] * scale) * nw[i];
    }
    workgroupBarrier();

    // q_h | k_g | v_g = W · xn: local row r → matrix row (q rows, then k rows, then v rows).
    let slot = sid * sgs + lane;                 // subgroup-major, so a row's TPR lanes share a subgroup
    for (var r0 = 0u; r0 < 3u * HEAD_DIM; r0 += WG / TPR) {
        let r = r0 + slot / TPR;
        var acc = 0.0;
        if (r < 3u * HEAD_DIM) {
            let part = r / HEAD_DIM;
            let first = select(select((HEADS + KV_HEADS + g) * HEAD_DIM, (HEADS + g) * HEAD_DIM, part == 1u),
                               h * HEAD_DIM, part == 0u);
            acc = row_part(first + r % HEAD_DIM, slot % TPR);
        }
        for (var o = TPR / 2u; o > 0u; o >>= 1u) {
            acc += subgroupShuffleXor(acc, o);
        }
        if (slot % TPR == 0u && r < 3u * HEAD_DIM) {
            qkv[r] = acc;
        }
    }
    workgroupBarrier();

    // RoPE on q_h (qkv[0..HEAD_DIM)) and k_g (qkv[HEAD_DIM..2·HEAD_DIM)), pair by pair, in place.
    let half = HEAD_DIM / 2u;
    for (var p = li; p < 2u * half; p += WG) {
        let i = p % half;
        let j = (p / half) * HEAD_DIM + 2u * i;
        if (2u * i < ROPE_DIM) {
            let cs = rope[pos * (ROPE_DIM / 2u) + i];
            let a = qkv[j];
            let b = qkv[j + 1u];
            qkv[j] = a * cs.x - b * cs.y;
            qkv[j + 1u] = a * cs.y + b * cs.x;
        }
    }
    workgroupBarrier();

    let rowlen = KV_HEADS * HEAD_DIM;           // floats per cached position
    let kv0 = g * HEAD_DIM;
    if (h % (HEADS / KV_HEADS) == 0u) {
        for (var dd = li; dd < HEAD_DIM; dd += WG) {
            vc[pos * rowlen + kv0 + dd] = qkv[2u * HEAD_DIM + dd];
        }
        for (var j = li; j < HEAD_DIM / 4u; j += WG) {
            let k = HEAD_DIM + 4u * j;
            kc[(pos * rowlen + kv0) / 4u + j] = vec4<f32>(qkv[k], qkv[k + 1u], qkv[k + 2u], qkv[k + 3u]);
        }
    }

    // Scores of positions 0..pos into this head's scratch row, then softmax.
    let n = pos + 1u;
    let srow = h * (arrayLength(&att) / HEADS);
    let inv = 1.0 / sqrt(f32(HEAD_DIM));
    var m = -3.4028234e38;
    for (var t = li; t < n; t += WG) {
        var s = 0.0;
        if (t == pos) {
            for (var dd = 0u; dd < HEAD_DIM; dd++) {
                s += qkv[dd] * qkv[HEAD_DIM + dd];
            }
        } else {
            let k0 = (t * rowlen + kv0) / 4u;
            for (var j = 0u; j < HEAD_DIM / 4u; j++) {
                s += dot(vec4<f32>(qkv[4u * j], qkv[4u * j + 1u], qkv[4u * j + 2u], qkv[4u * j + 3u]), kc[k0 + j]);
            }
        }
        s *= inv;
        att[srow + t] = s;
        m = max(m, s);
    }
    m = wg_reduce(m, true, sid, lane, nsg);
    var sum = 0.0;
    for (var t = li; t < n; t += WG) {
        let e = exp(att[srow + t] - m);
        att[srow + t] = e;
        sum += e;
    }
    sum = wg_reduce(sum, false, sid, lane, nsg);
    storageBarrier();   // the e[t] written above by other invocations are visible below

    // out_h[d] = Σ_t e[t]·V[t, g, d] / sum: `parts` invocations per d split t, summed in a fixed order.
    let parts = max(WG / HEAD_DIM, 1u);
    for (var idx = li; idx < parts * HEAD_DIM; idx += WG) {
        let dd = idx % HEAD_DIM;
        var acc = 0.0;
        for (var t = idx / HEAD_DIM; t < n; t += parts) {
            var v = qkv[2u * HEAD_DIM + dd];
            if (t != pos) {
                v = vc[t * rowlen + kv0 + dd];
            }
            acc += att[srow + t] * v;
        }
        pacc[idx] = acc;
    }
    workgroupBarrier();
    for (var dd = li; dd < HEAD_DIM; dd += WG) {
        var o = 0.0;
        for (var q = 0u; q < parts; q++) {
            o += pacc[q * HEAD_DIM + dd];
        }
        out[h * HEAD_DIM + dd] = o / sum;
    }
}
