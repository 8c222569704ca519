// matvec_q4_1_add.wgsl — y += W·v: a Q4_1 matvec with the residual add fused in.
// Used twice per layer: the attention output projection (x += Wo·att) and the FFN down projection
// (x += Wdown·h).  Replaces matvec + add of the per-op plan (2 dispatches → 1).  Each row of y is read
// and written only by the invocation that computes it, so the in-place add needs no extra buffer.
//
// W: ROWS rows of COLS/32 Q4_1 blocks (20 bytes = 5 u32: f16 d | f16 m, then 16 nibble bytes; weight
// j < 16 = low nibble of byte j, j + 16 = high nibble; w = d·q + m).
// TPR invocations of one subgroup share a row: they split it into work items of QPI nibble words and
// meet in a subgroupShuffleXor butterfly, so there is no workgroup barrier at all.  TPR = 1 (a row per
// invocation) suits CPU adapters; GPUs want TPR = 16..32.  TPR must divide the subgroup size.
//
// Bindings (group 0):
//   0  storage, read        array<u32>        W   ROWS · COLS/32 · 5
//   1  storage, read        array<vec4<f32>>  v   COLS/4
//   2  storage, read_write  array<f32>        y   ROWS   (y += W·v)
// Dispatch: (ceil(ROWS / (WG / TPR · RPT)), 1, 1).
// Overrides: ROWS, COLS (multiple of 32), TPR = invocations per row, WG = workgroup size (a multiple of
//   the subgroup size).
//   RPT = rows per invocation group (1..4; x is read once for all of them),
//   QPI = nibble words per work item (1, 2 or 4): small for many invocations per row, 4 for one.
enable subgroups;

override ROWS: u32;
override COLS: u32;
override TPR: u32 = 1u;
override QPI: u32 = 4u;
override RPT: u32 = 1u;
override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

// This invocation's share of rows row0 .. row0 + RPT − 1 (at most 4) · x, one component per row:
// work items of QPI nibble words (8·QPI weights; QPI = 4 is a whole block), items part, part + TPR, …
// x is loaded once per item and reused for the RPT rows.  The caller sums the TPR shares.
fn rows_part(row0: u32, part: u32) -> vec4<f32> {
    let nb = COLS / 32u;
    let per = 4u / QPI;
    var acc = vec4<f32>(0.0);
    var xl: array<vec4<f32>, 4>;
    var xh: array<vec4<f32>, 4>;
    for (var it = part; it < nb * per; it += TPR) {
        let b = it / per;
        let q0 = (it % per) * QPI;
        var sx = vec4<f32>(0.0);
        for (var j = 0u; j < QPI; j++) {            // constant trip counts: unrolled
            let k = b * 8u + q0 + j;
            xl[j] = v[k];
            xh[j] = v[k + 4u];
            sx += xl[j] + xh[j];
        }
        let s = sx.x + sx.y + sx.z + sx.w;
        for (var r = 0u; r < RPT; r++) {
            let base = (min(row0 + r, ROWS - 1u) * nb + b) * 5u;
            var qx = 0.0;
            for (var j = 0u; j < QPI; j++) {
                let w = vec4<u32>(W[base + 1u + q0 + j]);
                qx += dot(vec4<f32>((w >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(15u)), xl[j])
                    + dot(vec4<f32>((w >> vec4<u32>(4u, 12u, 20u, 28u)) & vec4<u32>(15u)), xh[j]);
            }
            let dm = unpack2x16float(W[base]);
            acc[r] += dm.x * qx + dm.y * s;
        }
    }
    return acc;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(subgroup_invocation_id) lane: u32,
        @builtin(subgroup_size) sgs: u32, @builtin(subgroup_id) sid: u32) {
    let slot = sid * sgs + lane;                 // subgroup-major, so a row's TPR lanes share a subgroup
    let row0 = (wg.x * (WG / TPR) + slot / TPR) * RPT;
    var acc = vec4<f32>(0.0);
    if (row0 < ROWS) {
        acc = rows_part(row0, slot % TPR);
    }
    for (var o = TPR / 2u; o > 0u; o >>= 1u) {
        acc += subgroupShuffleXor(acc, o);
    }
    if (slot % TPR == 0u) {
        for (var r = 0u; r < RPT; r++) {
            if (row0 + r < ROWS) {
                y[row0 + r] = y[row0 + r] + acc[r];
            }
        }
    }
}
