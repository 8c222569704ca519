// matvec_q4_1.wgsl — y = W·x for a Q4_1 matrix W (ROWS × COLS), dequantized on the fly (w = d·q + m).
//
// W is the GGUF tensor's bytes exactly as stored: ROWS·COLS/32 blocks of 20 bytes = 5 u32 words,
//   word 0 = f16 d (low half) | f16 m (high half); words 1..4 = 16 bytes of nibbles, where byte j
//   holds element j (low nibble) and element j+16 (high nibble).
//
// Bindings (group 0):
//   0  storage, read        array<u32>        W   ROWS·COLS/32·5 words
//   1  storage, read        array<vec4<f32>>  x   COLS/4
//   2  storage, read_write  array<f32>        y   ROWS
// Dispatch: (ceil(ROWS / (WG / TPR)), 1, 1).
// Overrides: ROWS, COLS (multiple of 32), TPR = threads per row (power of two, divides WG), WG = workgroup size.
//   Each row's blocks are split over its TPR threads; partial sums meet in a workgroup tree reduction
//   (skipped when TPR = 1, the fast choice on CPU adapters where barriers are costly).
// No uniforms: shapes are pipeline constants.

override ROWS: u32;
override COLS: u32;
override TPR: u32 = 1u;
override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

var<workgroup> partial: array<f32, WG>;

// Dot product of one block (32 weights starting at word `base`) with x block `b`.
fn block_dot(base: u32, b: u32) -> f32 {
    let dm = unpack2x16float(W[base]);
    var qx = 0.0;
    var sx = vec4<f32>(0.0);
    for (var i = 0u; i < 4u; i++) {
        let w = vec4<u32>(W[base + 1u + i]);
        let lo = vec4<f32>((w >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(15u));
        let hi = vec4<f32>((w >> vec4<u32>(4u, 12u, 20u, 28u)) & vec4<u32>(15u));
        let xl = x[b * 8u + i];
        let xh = x[b * 8u + 4u + i];
        qx += dot(lo, xl) + dot(hi, xh);
        sx += xl + xh;
    }
    return dm.x * qx + dm.y * (sx.x + sx.y + sx.z + sx.w);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    let nb = COLS / 32u;
    let row = wg.x * (WG / TPR) + li / TPR;
    let t = li % TPR;
    var acc = 0.0;
    if (row < ROWS) {
        for (var b = t; b < nb; b += TPR) {
            acc += block_dot((row * nb + b) * 5u, b);
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
