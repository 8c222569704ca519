// matvec_q4_1_add.wgsl — y += W·v: a Q4_1 matvec with the residual add fused in.
// Used twice per layer: the attention output projection (x += Wo·att) and the FFN down projection
// (x += Wdown·h).  Replaces matvec + add of the per-op plan (2 dispatches → 1).  Each row of y is read
// and written by the one subgroup that computes it, so the in-place add needs no extra buffer.
//
// W: ROWS rows of COLS/32 Q4_1 blocks (20 bytes = 5 u32: f16 d | f16 m, then 16 nibble bytes; weight
// j < 16 = low nibble of byte j, j + 16 = high nibble; w = d·q + m).
// Rows go round-robin to the workgroup's subgroups; a subgroup's lanes split a row into quarter blocks
// (8 weights each) and meet in subgroupAdd: no workgroup barriers at all.
//
// Bindings (group 0):
//   0  storage, read        array<u32>        W   ROWS · COLS/32 · 5
//   1  storage, read        array<vec4<f32>>  v   COLS/4
//   2  storage, read_write  array<f32>        y   ROWS   (y += W·v)
// Dispatch: (ceil(ROWS / R), 1, 1).
// Overrides: ROWS, COLS (multiple of 32), R = rows per workgroup, WG = workgroup size.
enable subgroups;

override ROWS: u32;
override COLS: u32;
override R: u32 = 16u;
override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

fn quarter(dm: vec2<f32>, qs: u32, xlo: vec4<f32>, xhi: vec4<f32>) -> f32 {
    let lo = vec4<f32>((vec4<u32>(qs) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(15u));
    let hi = vec4<f32>((vec4<u32>(qs) >> vec4<u32>(4u, 12u, 20u, 28u)) & vec4<u32>(15u));
    let sx = xlo + xhi;
    return dm.x * (dot(lo, xlo) + dot(hi, xhi)) + dm.y * (sx.x + sx.y + sx.z + sx.w);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(subgroup_invocation_id) lane: u32,
        @builtin(subgroup_size) sgs: u32, @builtin(subgroup_id) sid: u32, @builtin(num_subgroups) nsg: u32) {
    let nb = COLS / 32u;
    for (var r = sid; r < R; r += nsg) {
        let row = wg.x * R + r;
        if (row < ROWS) {
            var acc = 0.0;
            for (var it = lane; it < nb * 4u; it += sgs) {
                let b = it >> 2u;
                let base = (row * nb + b) * 5u;
                let xi = b * 8u + (it & 3u);
                acc += quarter(unpack2x16float(W[base]), W[base + 1u + (it & 3u)], v[xi], v[xi + 4u]);
            }
            acc = subgroupAdd(acc);
            if (lane == 0u) {
                y[row] = y[row] + acc;
            }
        }
    }
}
