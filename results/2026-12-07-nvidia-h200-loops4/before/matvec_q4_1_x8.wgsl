// matvec_q4_1_x8.wgsl — y = W·x for a Q4_1 matrix W (ROWS × COLS), EIGHT rows per invocation.
// Same math, bindings and block layout as matvec_q4_1.wgsl (see there); this variant is for CPU
// adapters (SwiftShader), where every storage load is a 4-lane gather with bounds checks and
// barriers are costly: one invocation keeps eight rows' sums in registers, so each x value it loads
// serves eight rows, and no workgroup reduction is needed.  Nibbles are not shifted down: the nibble
// of byte k is masked in place (value q·2^(8k)), converted through i32 (exact; the unsigned conversion
// costs several more instructions there) and multiplied by x·2^(-8k), computed once per x load for the
// eight rows.  Powers of two only move exponents, so each product equals q·x exactly as in the plain form.
//
// Bindings (group 0):
//   0  storage, read        array<u32>        W   ROWS·COLS/32·5 words
//   1  storage, read        array<vec4<f32>>  x   COLS/4
//   2  storage, read_write  array<f32>        y   ROWS
// Dispatch: (ceil(ROWS / (8·WG)), 1, 1).
// Overrides: ROWS, COLS (multiple of 32), WG.  No uniforms.

override ROWS: u32;
override COLS: u32;
override WG: u32 = 16u;

@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

const NIBBLE = vec4<u32>(0xfu, 0xf00u, 0xf0000u, 0xf000000u);           // low nibble of bytes 0..3, in place
const UNSCALE = vec4<f32>(1.0, 0.00390625, 1.52587890625e-05, 5.9604644775390625e-08);  // 2^0, 2^-8, 2^-16, 2^-24

// q·x for the 8 weights packed in word w; xl, xh are the matching x values times UNSCALE.
fn word_dot(w: u32, xl: vec4<f32>, xh: vec4<f32>) -> f32 {
    let lo = vec4<f32>(vec4<i32>(vec4<u32>(w) & NIBBLE));
    let hi = vec4<f32>(vec4<i32>(vec4<u32>(w >> 4u) & NIBBLE));
    return dot(lo, xl) + dot(hi, xh);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let nb = COLS / 32u;
    let s = nb * 5u;                                   // words per row
    let row0 = gid.x * 8u;
    if (row0 >= ROWS) {
        return;
    }
    // Word offsets of the eight rows (past the end: repeat the last row, results not written).
    let ra = min(vec4<u32>(row0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(ROWS - 1u)) * s;
    let rb = min(vec4<u32>(row0) + vec4<u32>(4u, 5u, 6u, 7u), vec4<u32>(ROWS - 1u)) * s;
    var acc_a = vec4<f32>(0.0);
    var acc_b = vec4<f32>(0.0);
    for (var b = 0u; b < nb; b++) {
        let o = b * 5u;
        var qa = vec4<f32>(0.0);
        var qb = vec4<f32>(0.0);
        var sx = vec4<f32>(0.0);
        for (var i = 1u; i < 5u; i++) {
            let x_lo = x[b * 8u + i - 1u];   // elements 4(i-1) .. 4(i-1)+3 of the block
            let x_hi = x[b * 8u + i + 3u];   // the same + 16
            sx += x_lo + x_hi;
            let xl = x_lo * UNSCALE;
            let xh = x_hi * UNSCALE;
            qa += vec4<f32>(word_dot(W[ra.x + o + i], xl, xh), word_dot(W[ra.y + o + i], xl, xh),
                            word_dot(W[ra.z + o + i], xl, xh), word_dot(W[ra.w + o + i], xl, xh));
            qb += vec4<f32>(word_dot(W[rb.x + o + i], xl, xh), word_dot(W[rb.y + o + i], xl, xh),
                            word_dot(W[rb.z + o + i], xl, xh), word_dot(W[rb.w + o + i], xl, xh));
        }
        let xsum = sx.x + sx.y + sx.z + sx.w;
        let a0 = unpack2x16float(W[ra.x + o]);
        let a1 = unpack2x16float(W[ra.y + o]);
        let a2 = unpack2x16float(W[ra.z + o]);
        let a3 = unpack2x16float(W[ra.w + o]);
        let b0 = unpack2x16float(W[rb.x + o]);
        let b1 = unpack2x16float(W[rb.y + o]);
        let b2 = unpack2x16float(W[rb.z + o]);
        let b3 = unpack2x16float(W[rb.w + o]);
        acc_a += vec4<f32>(a0.x, a1.x, a2.x, a3.x) * qa + vec4<f32>(a0.y, a1.y, a2.y, a3.y) * xsum;
        acc_b += vec4<f32>(b0.x, b1.x, b2.x, b3.x) * qb + vec4<f32>(b0.y, b1.y, b2.y, b3.y) * xsum;
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
