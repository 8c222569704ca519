// matvec_q8_0.wgsl — y = W·x for a Q8_0 matrix W (ROWS × COLS), dequantized on the fly (w = d·q).
// Used for the output head (token_embd, tied): 49152 × 576.
//
// W is the GGUF tensor's bytes exactly as stored: 34-byte blocks (f16 d, 32 × int8). Blocks are not
// 4-byte aligned, but a PAIR of blocks is 68 bytes = 17 words, so with COLS a multiple of 64 every
// row and every pair starts on a word. Within a pair (words p..p+16):
//   word 0 low half = d0; q0[j] = byte 2+j  → 4 quants straddle two words: (w[i] >> 16) | (w[i+1] << 16)
//   word 8 high half = d1; q1 = words 9..16, aligned.
//
// Bindings (group 0):
//   0  storage, read        array<u32>        W   ROWS·COLS/64·17 words
//   1  storage, read        array<vec4<f32>>  x   COLS/4
//   2  storage, read_write  array<f32>        y   ROWS
// Dispatch: (ceil(ROWS / (WG / TPR)), 1, 1).
// Overrides: ROWS, COLS (multiple of 64), TPR = threads per row (power of two, divides WG), WG.
// No uniforms.

override ROWS: u32;
override COLS: u32;
override TPR: u32 = 1u;
override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

var<workgroup> partial: array<f32, WG>;

// Four int8 packed in a u32 → vec4<f32> (byte 0 first), by arithmetic shifts (exact).
fn i8x4(w: u32) -> vec4<f32> {
    return vec4<f32>(bitcast<vec4<i32>>(vec4<u32>(w) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}

// Dot product of a pair of blocks (64 weights from word `p`) with x vec4s from `xv`.
fn pair_dot(p: u32, xv: u32) -> f32 {
    var s0 = 0.0;
    var s1 = 0.0;
    var lo = W[p];
    for (var i = 0u; i < 8u; i++) {
        let hi = W[p + 1u + i];
        s0 += dot(i8x4((lo >> 16u) | (hi << 16u)), x[xv + i]);
        s1 += dot(i8x4(W[p + 9u + i]), x[xv + 8u + i]);
        lo = hi;
    }
    let d0 = unpack2x16float(W[p]).x;
    let d1 = unpack2x16float(W[p + 8u]).y;
    return d0 * s0 + d1 * s1;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    let np = COLS / 64u;
    let row = wg.x * (WG / TPR) + li / TPR;
    let t = li % TPR;
    var acc = 0.0;
    if (row < ROWS) {
        for (var p = t; p < np; p += TPR) {
            acc += pair_dot((row * np + p) * 17u, p * 16u);
        }
    }
    if (TPR > 1u) {
        partial[li] = acc;
        workgroupBarrier();
        for (var s = TPR / 2u; s > 0u; s >>= 1u) {
            if (t < s) {
                partial[li] += partial[li + s];
            }
            workgroupBarrier();
        }
        acc = partial[li];
    }
    if (t == 0u && row < ROWS) {
        y[row] = acc;
    }
}
