// ffn_gate_up_silu.wgsl — the first half of a llama FFN in ONE dispatch:
//   g = Wgate[i]·(x ∘ ffn_norm) / rms(x),  u = Wup[i]·(x ∘ ffn_norm) / rms(x)   (= W·rmsnorm(x)·ffn_norm)
//   h[i] = silu(g) · u                              silu(g) = g / (1 + exp(−g))
// Every subgroup computes rms(x) itself (D floats, cheap) and forms x ∘ ffn_norm as it reads it, so
// there is no staging and no workgroup barrier at all.
// Replaces rmsnorm, two matvecs and silu_mul of the per-op plan (4 dispatches → 1).
//
// Wgate|Wup is ONE Q4_1 matrix of 2·FFN rows (gate rows 0..FFN, up rows FFN..2·FFN), D/32 blocks per
// row (20 bytes = 5 u32: f16 d | f16 m, then 16 nibble bytes; weight j < 16 = low nibble of byte j,
// j + 16 = high nibble; w = d·q + m).  Output i goes to TPR invocations of one subgroup, which compute
// both its rows (they split each row into work items of QPI nibble words and meet in a
// subgroupShuffleXor butterfly).  TPR = 1 suits CPU adapters, 16..32 GPUs; TPR must divide the subgroup size.
//
// Bindings (group 0):
//   0  storage, read        array<vec4<f32>>  x    D/4
//   1  storage, read        array<vec4<f32>>  nw   D/4     ffn_norm weight
//   2  storage, read        array<u32>        W    2·FFN · D/32 · 5
//   3  storage, read_write  array<f32>        h    FFN
// Dispatch: (ceil(FFN / (WG / TPR · RPT)), 1, 1).
// Overrides: D (multiple of 32), FFN, EPS, TPR = invocations per output, WG = workgroup size,
//   RPT = outputs per invocation group (1..4; x is read once for all of them),
//   QPI = nibble words per work item (1, 2 or 4): small for many invocations per row, 4 for one.
enable subgroups;

override D: u32;
override FFN: u32;
override EPS: f32 = 1e-5;
override TPR: u32 = 1u;
override QPI: u32 = 4u;
override RPT: u32 = 1u;
override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> nw: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> W: array<u32>;
@group(0) @binding(3) var<storage, read_write> h: array<f32>;


struct GateUp {
    g: vec4<f32>,
    u: vec4<f32>,
}

// This invocation's share of gate and up rows i0 .. i0 + RPT − 1 (at most 4) · (x ∘ nw), one component
// per output: work items of QPI nibble words (8·QPI weights; QPI = 4 is a whole block), items part,
// part + TPR, …  x ∘ nw is formed once per item and reused for the 2·RPT rows.  The caller sums the
// TPR shares and applies 1 / rms(x).
fn rows_part(i0: u32, part: u32) -> GateUp {
    let nb = D / 32u;
    let per = 4u / QPI;
    var acc = GateUp(vec4<f32>(0.0), vec4<f32>(0.0));
    var xl: array<vec4<f32>, 4>;
    var xh: array<vec4<f32>, 4>;
    for (var it = part; it < nb * per; it += TPR) {
        let b = it / per;
        let q0 = (it % per) * QPI;
        var sx = vec4<f32>(0.0);
        for (var j = 0u; j < QPI; j++) {            // constant trip counts: unrolled
            let k = b * 8u + q0 + j;
            xl[j] = x[k] * nw[k];
            xh[j] = x[k + 4u] * nw[k + 4u];
            sx += xl[j] + xh[j];
        }
        let s = sx.x + sx.y + sx.z + sx.w;
        for (var r = 0u; r < 2u * RPT; r++) {       // gate rows, then up rows
            let row = select(FFN + i0 + r - RPT, i0 + r, r < RPT);
            let base = (min(row, 2u * FFN - 1u) * nb + b) * 5u;
            var qx = 0.0;
            for (var j = 0u; j < QPI; j++) {
                let w = vec4<u32>(W[base + 1u + q0 + j]);
                qx += dot(vec4<f32>((w >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(15u)), xl[j])
                    + dot(vec4<f32>((w >> vec4<u32>(4u, 12u, 20u, 28u)) & vec4<u32>(15u)), xh[j]);
            }
            let dm = unpack2x16float(W[base]);
            let t = dm.x * qx + dm.y * s;
            if (r < RPT) {
                acc.g[r] += t;
            } else {
                acc.u[r - RPT] += t;
            }
        }
    }
    return acc;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(subgroup_invocation_id) lane: u32,
        @builtin(subgroup_size) sgs: u32, @builtin(subgroup_id) sid: u32) {
    var ss = 0.0;
    for (var i = lane; i < D / 4u; i += sgs) {
        ss += dot(x[i], x[i]);
    }
    let scale = 1.0 / sqrt(subgroupAdd(ss) / f32(D) + EPS);

    let slot = sid * sgs + lane;                 // subgroup-major, so an output's TPR lanes share a subgroup
    let i0 = (wg.x * (WG / TPR) + slot / TPR) * RPT;
    var gate = vec4<f32>(0.0);
    var up = vec4<f32>(0.0);
    if (i0 < FFN) {
        let gu = rows_part(i0, slot % TPR);
        gate = gu.g;
        up = gu.u;
    }
    for (var o = TPR / 2u; o > 0u; o >>= 1u) {
        gate += subgroupShuffleXor(gate, o);
        up += subgroupShuffleXor(up, o);
    }
    gate *= scale;
    up *= scale;
    if (slot % TPR == 0u) {
        for (var r = 0u; r < RPT; r++) {
            if (i0 + r < FFN) {
                h[i0 + r] = gate[r] / (1.0 + exp(-gate[r])) * up[r];
            }
        }
    }
}
