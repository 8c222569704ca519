// repack_head.wgsl — the resident plan's copy of the tied Q8_0 embedding (= output head) for HQ = 1
// (app/llm/resident.py, ResidentTuning.hq).
//
// The head's work items are (row, pair of 32-element blocks), 68 bytes = 17 words each, in row order.  Read in place,
// neighbouring invocations' words are 68 bytes apart, so each of a warp's 17 load instructions touches ~68 sectors.
// Here item g = row · D/64 + p becomes 18 words, word k of it at ((g / 32) · 18 + k) · 32 + g % 32:
//   k 0..7    block 0's 32 int8 quants (4 a word, element order), unshifted (in place they straddle words)
//   k 8..15   block 1's quants
//   k 16, 17  block 0's and block 1's scale d, as f32 bits (f16 → f32 is exact)
// so a warp's k-th load is one 128-byte line.  The values are the same; the resident kernel's embedding reads
// (embed_at) and head dot products (q80_dot) read this layout when HQ = 1.
//
// Bindings (group 0): 0 storage, read  src (token_embd, u32 words); 1 storage, read_write  dst (the copy,
// ceil(VOCAB · D/64 / 32) · 576 words; the last chunk's missing items repeat the last one).
// Dispatch: one invocation per word of dst, (x, y) workgroups of 64 with x ≤ 65535 (o = global x + y · 64 · x).

override D: u32;
override VOCAB: u32;

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let o = gid.x + gid.y * nwg.x * 64u;
    if (o >= arrayLength(&dst)) { return; }
    let k = (o % 576u) / 32u;
    let g = min((o / 576u) * 32u + o % 32u, VOCAB * (D / 64u) - 1u);
    let b = g * 17u;                                         // the pair's first word in place
    var v: u32;
    if (k < 8u) {
        v = (src[b + k] >> 16u) | (src[b + k + 1u] << 16u);  // bytes 2 + 4k .. 5 + 4k
    } else if (k < 16u) {
        v = src[b + k + 1u];                                 // bytes 36 + 4(k − 8) ..: block 1 starts at byte 34
    } else if (k == 16u) {
        v = bitcast<u32>(unpack2x16float(src[b]).x);
    } else {
        v = bitcast<u32>(unpack2x16float(src[b + 8u]).y);
    }
    dst[o] = v;
}
