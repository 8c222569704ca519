// attention.wgsl — causal grouped-query attention of one query vector over the KV cache, one
// workgroup per query head h (its KV head is h / (HEADS / KV_HEADS)), positions 0..step.pos:
//   s[t] = q_h · K[t, kvh] / sqrt(HEAD_DIM);  p = softmax(s);  out_h = Σ_t p[t] · V[t, kvh]
// Scores go to a storage scratch row per head (any context length fits; workgroup memory would not).
//
// Bindings (group 0):
//   0  uniform (dynamic offset)  Step        { pos, slot }
//   1  storage, read             array<f32>  q     HEADS·HEAD_DIM (after RoPE)
//   2  storage, read             array<f32>  kc    ctx·KV_HEADS·HEAD_DIM  (this layer's K cache)
//   3  storage, read             array<f32>  vc    ctx·KV_HEADS·HEAD_DIM  (this layer's V cache)
//   4  storage, read_write       array<f32>  att   HEADS·ctx   (scores scratch; row stride = length / HEADS)
//   5  storage, read_write       array<f32>  out   HEADS·HEAD_DIM
// Dispatch: (HEADS, 1, 1).
// Overrides: HEADS, KV_HEADS (divides HEADS), HEAD_DIM (≤ 256), WG (power of two).

struct Step {
    pos: u32,
    slot: u32,
}

override HEADS: u32;
override KV_HEADS: u32;
override HEAD_DIM: u32;
override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> kc: array<f32>;
@group(0) @binding(3) var<storage, read> vc: array<f32>;
@group(0) @binding(4) var<storage, read_write> att: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

var<workgroup> qs: array<f32, 256>;
var<workgroup> red: array<f32, WG>;

// Tree reduction of red[] (max or sum); every invocation gets the result.
fn reduce(li: u32, v: f32, is_max: bool) -> f32 {
    red[li] = v;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k >>= 1u) {
        if (li < k) {
            red[li] = select(red[li] + red[li + k], max(red[li], red[li + k]), is_max);
        }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();  // red[] is reused by the next reduction
    return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    let h = wg.x;
    let kv = (h / (HEADS / KV_HEADS)) * HEAD_DIM;   // offset of the KV head inside a cache row
    let row = KV_HEADS * HEAD_DIM;                   // floats per cached position
    let n = step.pos + 1u;
    let base = h * (arrayLength(&att) / HEADS);
    let scale = 1.0 / sqrt(f32(HEAD_DIM));
    for (var d = li; d < HEAD_DIM; d += WG) {
        qs[d] = q[h * HEAD_DIM + d];
    }
    workgroupBarrier();

    var m = -0x1.fffffep+127f;
    for (var t = li; t < n; t += WG) {
        var s = 0.0;
        for (var d = 0u; d < HEAD_DIM; d++) {
            s += qs[d] * kc[t * row + kv + d];
        }
        s *= scale;
        att[base + t] = s;
        m = max(m, s);
    }
    m = reduce(li, m, true);

    var sum = 0.0;
    for (var t = li; t < n; t += WG) {
        let e = exp(att[base + t] - m);
        att[base + t] = e;
        sum += e;
    }
    sum = reduce(li, sum, false);
    storageBarrier();  // every invocation's att[] writes are visible below

    for (var d = li; d < HEAD_DIM; d += WG) {
        var acc = 0.0;
        for (var t = 0u; t < n; t++) {
            acc += att[base + t] * vc[t * row + kv + d];
        }
        out[h * HEAD_DIM + d] = acc / sum;
    }
}
