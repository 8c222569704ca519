// head_q8_0_argmax.wgsl — final norm, output head and the first argmax stage in ONE dispatch:
//   xn = rmsnorm(x) · output_norm                  (every workgroup recomputes it: D floats, cheap)
//   logits[r] = E[r]·xn                             E: the Q8_0 output head (token_embd when tied)
//   parts[wg] = (max, lowest index of the max) over this workgroup's R rows   (NaN never wins)
// argmax.wgsl's `stage2` then reduces parts[] to the next token.  Replaces rmsnorm, head and argmax
// stage 1 of the per-op plan (3 dispatches → 1).
//
// E is the GGUF tensor's bytes as stored: 34-byte blocks (f16 d, 32 × int8), w = d·q.  A PAIR of blocks
// is 68 bytes = 17 u32, so with D a multiple of 64 every row and pair starts on a word:
//   word 0 low half = d0, quants of block 0 = bytes 2..33 → quad i = (w[i] >> 16) | (w[i + 1] << 16);
//   word 8 high half = d1, quants of block 1 = words 9..16.
// A row's work items are (pair, quad): 8 per pair; a subgroup's lanes split them, subgroupAdd joins.
//
// Bindings (group 0):
//   0  storage, read        array<vec4<f32>>  x       D/4
//   1  storage, read        array<vec4<f32>>  nw      D/4      output_norm weight
//   2  storage, read        array<u32>        E       ROWS · D/64 · 17
//   3  storage, read_write  array<f32>        logits  ROWS
//   4  storage, read_write  array<Best>       parts   ceil(ROWS / R)
// Dispatch: (ceil(ROWS / R), 1, 1).
// Overrides: D (multiple of 64), ROWS, EPS, R = rows per workgroup, WG = workgroup size.
enable subgroups;

struct Best {
    v: f32,
    i: u32,
}

override D: u32;
override ROWS: u32;
override EPS: f32 = 1e-5;
override R: u32 = 64u;
override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> nw: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> E: array<u32>;
@group(0) @binding(3) var<storage, read_write> logits: array<f32>;
@group(0) @binding(4) var<storage, read_write> parts: array<Best>;

var<workgroup> xs: array<vec4<f32>, D / 4u>;
var<workgroup> red: array<f32, WG>;
var<workgroup> bests: array<Best, WG>;

fn i8x4(w: u32) -> vec4<f32> {
    return vec4<f32>(bitcast<vec4<i32>>(vec4<u32>(w) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}

fn better(a: Best, b: Best) -> Best {
    if (a.v > b.v || (a.v == b.v && a.i < b.i)) {
        return a;
    }
    return b;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sgs: u32,
        @builtin(subgroup_id) sid: u32, @builtin(num_subgroups) nsg: u32) {
    let d4 = D / 4u;
    var ss = 0.0;
    for (var i = li; i < d4; i += WG) {
        let v = x[i];
        xs[i] = v;
        ss += dot(v, v);
    }
    ss = subgroupAdd(ss);
    if (lane == 0u) {
        red[sid] = ss;
    }
    workgroupBarrier();
    var total = 0.0;
    for (var i = 0u; i < nsg; i++) {
        total += red[i];
    }
    let scale = 1.0 / sqrt(total / f32(D) + EPS);
    for (var i = li; i < d4; i += WG) {
        xs[i] = (xs[i] * scale) * nw[i];
    }
    workgroupBarrier();

    let np = D / 64u;
    var best = Best(-3.4028234e38, ROWS);
    for (var r = sid; r < R; r += nsg) {        // increasing rows: a strict > keeps the lowest index
        let row = wg.x * R + r;
        if (row < ROWS) {
            var acc = 0.0;
            for (var it = lane; it < np * 8u; it += sgs) {
                let pr = it >> 3u;
                let i = it & 7u;
                let p = (row * np + pr) * 17u;
                let q0 = (E[p + i] >> 16u) | (E[p + i + 1u] << 16u);
                let s0 = dot(i8x4(q0), xs[pr * 16u + i]);
                let s1 = dot(i8x4(E[p + 9u + i]), xs[pr * 16u + 8u + i]);
                acc += unpack2x16float(E[p]).x * s0 + unpack2x16float(E[p + 8u]).y * s1;
            }
            acc = subgroupAdd(acc);
            if (lane == 0u) {
                logits[row] = acc;
            }
            best = better(Best(acc, row), best);
        }
    }
    if (lane == 0u) {
        bests[sid] = best;
    }
    workgroupBarrier();
    if (li == 0u) {
        var b = bests[0];
        for (var i = 1u; i < nsg; i++) {
            b = better(bests[i], b);
        }
        parts[wg.x] = b;
    }
}
