// repack_cm.wgsl — the resident plan's copy of the layer matrices with the output projection (CM bit 2) and the
// down projection (bit 1) of every layer column-major (app/llm/resident.py, ResidentTuning.cm).
//
// The resident kernel's short matvecs give neighbouring invocations neighbouring rows of one block column: in the
// GGUF's row-major order their 20-byte Q4_1 blocks are a whole row apart (360 bytes for Wo, 960 for Wdown), so
// every invocation of a warp touches its own cache line.  Column-major, block column c's rows lie back to back
// (block (r, c) at (c · D + r) · 5 words from the matrix's start), and a warp's loads cover a few whole lines.
// Bit 4: q|k|v and gate|up (the long matvecs, whose items are a row's pairs of blocks, 10 words each, in row order)
// word-interleaved in chunks of 32 items: word j of item g at (g / 32) · 320 + j · 32 + g % 32 from the matrix's
// start (the item counts must be multiples of 32; app/llm/resident.py checks).
// Every other word is copied as it is.
//
// Bindings (group 0): 0 storage, read  src (the "layers" buffer, u32 words); 1 storage, read_write  dst (its copy).
// Dispatch: one invocation per word of src, (x, y) workgroups of 64 with x ≤ 65535 (i = global x + y · 64 · x).

override D: u32;
override HEADS: u32;
override HEAD_DIM: u32;
override FFN: u32;
override N_LAYERS: u32;
override L_STRIDE: u32;
override KV_HEADS: u32;
override OFF_O: u32;
override OFF_GATE: u32;
override OFF_DOWN: u32;
override CM: u32;

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= arrayLength(&src)) { return; }
    let l = i / L_STRIDE;
    let off = i % L_STRIDE;                                  // word within its layer
    var base = 0u;                                           // the matrix i is in, if it is rewritten,
    var cols = 0u;                                           // and its blocks per row (both have D rows)
    if (l < N_LAYERS && (CM & 2u) != 0u && off >= OFF_O && off < OFF_O + D * (HEADS * HEAD_DIM / 32u) * 5u) {
        base = OFF_O;
        cols = HEADS * HEAD_DIM / 32u;
    }
    if (l < N_LAYERS && (CM & 1u) != 0u && off >= OFF_DOWN && off < OFF_DOWN + D * (FFN / 32u) * 5u) {
        base = OFF_DOWN;
        cols = FFN / 32u;
    }
    var il = 0xffffffffu;                                    // bit 4: the interleaved matrix's start, if any
    if (l < N_LAYERS && (CM & 4u) != 0u && off < (HEADS + 2u * KV_HEADS) * HEAD_DIM * (D / 64u) * 10u) { il = 0u; }
    if (l < N_LAYERS && (CM & 4u) != 0u && off >= OFF_GATE && off < OFF_GATE + 2u * FFN * (D / 64u) * 10u) {
        il = OFF_GATE;
    }
    if (il != 0xffffffffu) {
        let o = off - il;
        dst[i] = src[i - o + ((o / 320u) * 32u + o % 32u) * 10u + (o % 320u) / 32u];
        return;
    }
    if (cols == 0u) {
        dst[i] = src[i];
        return;
    }
    let j = off - base;
    let rc = j / 5u;                                         // the destination's block: column rc / D, row rc % D
    dst[i] = src[i - j + ((rc % D) * cols + rc / D) * 5u + j % 5u];
}
