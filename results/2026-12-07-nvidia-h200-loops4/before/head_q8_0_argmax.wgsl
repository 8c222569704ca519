// head_q8_0_argmax.wgsl — final norm, output head and the first argmax stage in ONE dispatch:
//   logits[r] = E[r]·(x ∘ output_norm) / rms(x)     (= E[r]·rmsnorm(x)·output_norm; E is the Q8_0
//               output head, token_embd when tied)
//   parts[wg·SPW + s] = (max, lowest index of the max) over the rows of subgroup s   (NaN never wins)
// argmax.wgsl's `stage2` then reduces parts[] to the next token.  Replaces rmsnorm, head and argmax
// stage 1 of the per-op plan (3 dispatches → 1).
// No workgroup barrier anywhere: every subgroup computes rms(x) itself (D floats, cheap), forms
// x ∘ output_norm as it reads it, and writes its own argmax part.  (Barriers are very costly on CPU
// adapters such as SwiftShader, and buy nothing here on GPUs.)
//
// E is the GGUF tensor's bytes as stored: 34-byte blocks (f16 d, 32 × int8), w = d·q.  A PAIR of blocks
// is 68 bytes = 17 u32, so with D a multiple of 64 every row and pair starts on a word:
//   word 0 low half = d0, quants of block 0 = bytes 2..33 → quad i = (w[i] >> 16) | (w[i + 1] << 16);
//   word 8 high half = d1, quants of block 1 = words 9..16.
// A row's work items are QPI quads (4 quants of each block of a pair).  TPR invocations of one subgroup
// split a group of RPT consecutive rows (x is read once for all RPT rows) and meet in a
// subgroupShuffleXor butterfly; the subgroup's best comes from subgroupMax / subgroupMin.
//
// Bindings (group 0):
//   0  storage, read        array<vec4<f32>>  x       D/4
//   1  storage, read        array<vec4<f32>>  nw      D/4      output_norm weight
//   2  storage, read        array<u32>        E       ROWS · D/64 · 17
//   3  storage, read_write  array<f32>        logits  ROWS
//   4  storage, read_write  array<Best>       parts   ceil(ROWS / (WG / TPR · RPT)) · SPW
// Dispatch: (ceil(ROWS / (WG / TPR · RPT)), 1, 1).
// Overrides: D (multiple of 64), ROWS, EPS, WG = workgroup size, TPR = invocations per row group
//   (divides the subgroup size), RPT = rows per group (1..4), QPI = quads per work item (1, 2, 4, 8),
//   SPW = parts per workgroup = WG / the smallest subgroup size (subgroups that do not exist, when
//   the subgroups are larger, get a part that never wins).
enable subgroups;

struct Best {
    v: f32,
    i: u32,
}

override D: u32;
override ROWS: u32;
override EPS: f32 = 1e-5;
override WG: u32 = 64u;
override TPR: u32 = 1u;
override RPT: u32 = 1u;
override QPI: u32 = 8u;
override SPW: u32 = 16u;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> nw: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> E: array<u32>;
@group(0) @binding(3) var<storage, read_write> logits: array<f32>;
@group(0) @binding(4) var<storage, read_write> parts: array<Best>;

fn i8x4(w: u32) -> vec4<f32> {
    return vec4<f32>(bitcast<vec4<i32>>(vec4<u32>(w) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}

// This invocation's share of rows row0 .. row0 + RPT − 1 · (x ∘ nw), one component per row.
fn rows_part(row0: u32, part: u32) -> vec4<f32> {
    let np = D / 64u;
    let per = 8u / QPI;
    var acc = vec4<f32>(0.0);
    var x0: array<vec4<f32>, 8>;
    var x1: array<vec4<f32>, 8>;
    for (var it = part; it < np * per; it += TPR) {
        let pr = it / per;
        let i0 = (it % per) * QPI;
        for (var j = 0u; j < QPI; j++) {            // constant trip counts: unrolled
            let k = pr * 16u + i0 + j;
            x0[j] = x[k] * nw[k];
            x1[j] = x[k + 8u] * nw[k + 8u];
        }
        for (var r = 0u; r < RPT; r++) {
            let p = (min(row0 + r, ROWS - 1u) * np + pr) * 17u;
            var s0 = 0.0;
            var s1 = 0.0;
            var lo = E[p + i0];
            for (var j = 0u; j < QPI; j++) {
                let hi = E[p + i0 + j + 1u];
                s0 += dot(i8x4((lo >> 16u) | (hi << 16u)), x0[j]);
                s1 += dot(i8x4(E[p + 9u + i0 + j]), x1[j]);
                lo = hi;
            }
            acc[r] += unpack2x16float(E[p]).x * s0 + unpack2x16float(E[p + 8u]).y * s1;
        }
    }
    return acc;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(subgroup_invocation_id) lane: u32,
        @builtin(subgroup_size) sgs: u32, @builtin(subgroup_id) sid: u32, @builtin(num_subgroups) nsg: u32) {
    var ss = 0.0;
    for (var i = lane; i < D / 4u; i += sgs) {
        ss += dot(x[i], x[i]);
    }
    let scale = 1.0 / sqrt(subgroupAdd(ss) / f32(D) + EPS);

    let slot = sid * sgs + lane;                 // subgroup-major, so a row group's TPR lanes share a subgroup
    let row0 = (wg.x * (WG / TPR) + slot / TPR) * RPT;
    var acc = vec4<f32>(0.0);
    if (row0 < ROWS) {
        acc = rows_part(row0, slot % TPR);
    }
    for (var o = TPR / 2u; o > 0u; o >>= 1u) {
        acc += subgroupShuffleXor(acc, o);
    }
    acc *= scale;
    // This invocation's best row (rows in increasing order, so a strict > keeps the lowest index).
    var v = -3.4028234e38;
    var idx = ROWS;
    for (var r = 0u; r < RPT; r++) {
        let row = row0 + r;
        if (row < ROWS) {
            if (slot % TPR == 0u) {
                logits[row] = acc[r];
            }
            if (acc[r] > v) {                    // false for NaN: NaN never wins
                v = acc[r];
                idx = row;
            }
        }
    }
    let top = subgroupMax(v);
    let best = subgroupMin(select(0xffffffffu, idx, v == top));
    if (lane == 0u) {
        parts[wg.x * SPW + sid] = Best(top, min(best, ROWS));
        for (var s = nsg + sid; s < SPW; s += nsg) {   // parts of subgroups this workgroup does not have
            parts[wg.x * SPW + s] = Best(-3.4028234e38, ROWS);
        }
    }
}
