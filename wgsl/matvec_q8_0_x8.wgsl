// matvec_q8_0_x8.wgsl — y = W·x for a Q8_0 matrix W (ROWS × COLS), EIGHT rows per invocation.
// Same math, bindings and pair-of-blocks layout as matvec_q8_0.wgsl (see there); the variant for CPU
// adapters: each x value loaded serves eight rows, no workgroup reduction.
//
// Bindings (group 0):
//   0  storage, read        array<u32>        W   ROWS·COLS/64·17 words
//   1  storage, read        array<vec4<f32>>  x   COLS/4
//   2  storage, read_write  array<f32>        y   ROWS
// Dispatch: (ceil(ROWS / (8·WG)), 1, 1).
// Overrides: ROWS, COLS (multiple of 64), WG.  No uniforms.

override ROWS: u32;
override COLS: u32;
override WG: u32 = 16u;

@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

// Four int8 packed in a u32 → vec4<f32> (byte 0 first), by arithmetic shifts (exact).
fn i8x4(w: u32) -> vec4<f32> {
    return vec4<f32>(bitcast<vec4<i32>>(vec4<u32>(w) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}

// Block 0 of a pair: its quants straddle words (they start at byte 2).
fn dot0(p: u32, i: u32, xv: vec4<f32>) -> f32 {
    return dot(i8x4((W[p + i] >> 16u) | (W[p + i + 1u] << 16u)), xv);
}

// Block 1 of a pair: quants in words 9..16, aligned.
fn dot1(p: u32, i: u32, xv: vec4<f32>) -> f32 {
    return dot(i8x4(W[p + 9u + i]), xv);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let np = COLS / 64u;
    let s = np * 17u;                                  // words per row
    let row0 = gid.x * 8u;
    if (row0 >= ROWS) {
        return;
    }
    let ra = min(vec4<u32>(row0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(ROWS - 1u)) * s;
    let rb = min(vec4<u32>(row0) + vec4<u32>(4u, 5u, 6u, 7u), vec4<u32>(ROWS - 1u)) * s;
    var acc_a = vec4<f32>(0.0);
    var acc_b = vec4<f32>(0.0);
    for (var p = 0u; p < np; p++) {
        let o = p * 17u;
        var s0a = vec4<f32>(0.0);
        var s0b = vec4<f32>(0.0);
        var s1a = vec4<f32>(0.0);
        var s1b = vec4<f32>(0.0);
        for (var i = 0u; i < 8u; i++) {
            let x0 = x[p * 16u + i];
            let x1 = x[p * 16u + 8u + i];
            s0a += vec4<f32>(dot0(ra.x + o, i, x0), dot0(ra.y + o, i, x0), dot0(ra.z + o, i, x0), dot0(ra.w + o, i, x0));
            s0b += vec4<f32>(dot0(rb.x + o, i, x0), dot0(rb.y + o, i, x0), dot0(rb.z + o, i, x0), dot0(rb.w + o, i, x0));
            s1a += vec4<f32>(dot1(ra.x + o, i, x1), dot1(ra.y + o, i, x1), dot1(ra.z + o, i, x1), dot1(ra.w + o, i, x1));
            s1b += vec4<f32>(dot1(rb.x + o, i, x1), dot1(rb.y + o, i, x1), dot1(rb.z + o, i, x1), dot1(rb.w + o, i, x1));
        }
        let d0a = vec4<f32>(unpack2x16float(W[ra.x + o]).x, unpack2x16float(W[ra.y + o]).x,
                            unpack2x16float(W[ra.z + o]).x, unpack2x16float(W[ra.w + o]).x);
        let d0b = vec4<f32>(unpack2x16float(W[rb.x + o]).x, unpack2x16float(W[rb.y + o]).x,
                            unpack2x16float(W[rb.z + o]).x, unpack2x16float(W[rb.w + o]).x);
        let d1a = vec4<f32>(unpack2x16float(W[ra.x + o + 8u]).y, unpack2x16float(W[ra.y + o + 8u]).y,
                            unpack2x16float(W[ra.z + o + 8u]).y, unpack2x16float(W[ra.w + o + 8u]).y);
        let d1b = vec4<f32>(unpack2x16float(W[rb.x + o + 8u]).y, unpack2x16float(W[rb.y + o + 8u]).y,
                            unpack2x16float(W[rb.z + o + 8u]).y, unpack2x16float(W[rb.w + o + 8u]).y);
        acc_a += d0a * s0a + d1a * s1a;
        acc_b += d0b * s0b + d1b * s1b;
    }
    for (var r = 0u; r < 4u; r++) {
        if (row0 + r < ROWS) {
            y[row0 + r] = acc_a[r];
        }
        if (row0 + 4u + r < ROWS) {
            y[row0 + 4u + r] = acc_b[r];
        }
    }
}
