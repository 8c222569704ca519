// ffn_gate_up_silu.wgsl — the first half of a llama FFN in ONE dispatch:
//   xn = rmsnorm(x) · ffn_norm                    (every workgroup recomputes it: D floats, cheap)
//   h[i] = silu(Wgate[i]·xn) · (Wup[i]·xn)         silu(g) = g / (1 + exp(−g))
// Replaces rmsnorm, two matvecs and silu_mul of the per-op plan (4 dispatches → 1).
//
// Wgate|Wup is ONE Q4_1 matrix of 2·FFN rows (gate rows 0..FFN, up rows FFN..2·FFN), D/32 blocks per
// row (20 bytes = 5 u32: f16 d | f16 m, then 16 nibble bytes; weight j < 16 = low nibble of byte j,
// j + 16 = high nibble; w = d·q + m).  Output i goes to one subgroup, which computes both its rows
// (lanes split each row into quarter blocks, subgroupAdd joins them).
//
// Bindings (group 0):
//   0  storage, read        array<vec4<f32>>  x    D/4
//   1  storage, read        array<vec4<f32>>  nw   D/4     ffn_norm weight
//   2  storage, read        array<u32>        W    2·FFN · D/32 · 5
//   3  storage, read_write  array<f32>        h    FFN
// Dispatch: (ceil(FFN / R), 1, 1).
// Overrides: D (multiple of 32), FFN, EPS, R = outputs per workgroup, WG = workgroup size.
enable subgroups;

override D: u32;
override FFN: u32;
override EPS: f32 = 1e-5;
override R: u32 = 16u;
override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> nw: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> W: array<u32>;
@group(0) @binding(3) var<storage, read_write> h: array<f32>;

var<workgroup> xs: array<vec4<f32>, D / 4u>;
var<workgroup> red: array<f32, WG>;

fn quarter(dm: vec2<f32>, qs: u32, xlo: vec4<f32>, xhi: vec4<f32>) -> f32 {
    let lo = vec4<f32>((vec4<u32>(qs) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(15u));
    let hi = vec4<f32>((vec4<u32>(qs) >> vec4<u32>(4u, 12u, 20u, 28u)) & vec4<u32>(15u));
    let sx = xlo + xhi;
    return dm.x * (dot(lo, xlo) + dot(hi, xhi)) + dm.y * (sx.x + sx.y + sx.z + sx.w);
}

// One row of W · xn, summed over the subgroup (every lane gets the total).
fn row_dot(row: u32, lane: u32, sgs: u32) -> f32 {
    let nb = D / 32u;
    var acc = 0.0;
    for (var it = lane; it < nb * 4u; it += sgs) {
        let b = it >> 2u;
        let base = (row * nb + b) * 5u;
        let xi = b * 8u + (it & 3u);
        acc += quarter(unpack2x16float(W[base]), W[base + 1u + (it & 3u)], xs[xi], xs[xi + 4u]);
    }
    return subgroupAdd(acc);
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

    for (var r = sid; r < R; r += nsg) {
        let i = wg.x * R + r;
        if (i < FFN) {
            let gate = row_dot(i, lane, sgs);
            let up = row_dot(FFN + i, lane, sgs);
            if (lane == 0u) {
                h[i] = gate / (1.0 + exp(-gate)) * up;
            }
        }
    }
}
