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

// Block 0 of a pair: its quants straddle words (they start at byte 2): lo is word i, hi word i+1.
fn dot0(lo: u32, hi: u32, xv: vec4<f32>) -> f32 {
    return dot(i8x4((lo >> 16u) | (hi << 16u)), xv);
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
        // word i of each row's pair, carried into the next step so that every word is loaded once
        var la = vec4<u32>(W[ra.x + o], W[ra.y + o], W[ra.z + o], W[ra.w + o]);
        var lb = vec4<u32>(W[rb.x + o], W[rb.y + o], W[rb.z + o], W[rb.w + o]);
        // word 0's low half is d0
        let d0a = vec4<f32>(unpack2x16float(la.x).x, unpack2x16float(la.y).x, unpack2x16float(la.z).x,
                            unpack2x16float(la.w).x);
        let d0b = vec4<f32>(unpack2x16float(lb.x).x, unpack2x16float(lb.y).x, unpack2x16float(lb.z).x,
                            unpack2x16float(lb.w).x);
        for (var i = 0u; i < 8u; i++) {
            let x0 = x[p * 16u + i];
            let x1 = x[p * 16u + 8u + i];
            let j = o + i + 1u;
            let ha = vec4<u32>(W[ra.x + j], W[ra.y + j], W[ra.z + j], W[ra.w + j]);
            let hb = vec4<u32>(W[rb.x + j], W[rb.y + j], W[rb.z + j], W[rb.w + j]);
            s0a += vec4<f32>(dot0(la.x, ha.x, x0), dot0(la.y, ha.y, x0), dot0(la.z, ha.z, x0), dot0(la.w, ha.w, x0));
            s0b += vec4<f32>(dot0(lb.x, hb.x, x0), dot0(lb.y, hb.y, x0), dot0(lb.z, hb.z, x0), dot0(lb.w, hb.w, x0));
            let k = j + 8u;  // block 1: words 9..16 of the pair, aligned
            s1a += vec4<f32>(dot(i8x4(W[ra.x + k]), x1), dot(i8x4(W[ra.y + k]), x1),
                             dot(i8x4(W[ra.z + k]), x1), dot(i8x4(W[ra.w + k]), x1));
            s1b += vec4<f32>(dot(i8x4(W[rb.x + k]), x1), dot(i8x4(W[rb.y + k]), x1),
                             dot(i8x4(W[rb.z + k]), x1), dot(i8x4(W[rb.w + k]), x1));
            la = ha;
            lb = hb;
        }
        // after the loop la/lb hold word 8, whose high half is d1
        let d1a = vec4<f32>(unpack2x16float(la.x).y, unpack2x16float(la.y).y, unpack2x16float(la.z).y,
                            unpack2x16float(la.w).y);
        let d1b = vec4<f32>(unpack2x16float(lb.x).y, unpack2x16float(lb.y).y, unpack2x16float(lb.z).y,
                            unpack2x16float(lb.w).y);
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
