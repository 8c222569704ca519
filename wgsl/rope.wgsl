// rope.wgsl — llama.cpp NORM-mode rotary embedding at position step.pos:
//   (a, b) = (src[2i], src[2i+1]) of each head → dst: (a·cos − b·sin, a·sin + b·cos), i < ROPE_DIM/2;
//   dims ≥ ROPE_DIM are copied unchanged.
// cos/sin come from a table computed once on the CPU in float64 (GPU sin/cos of large angles are
// not accurate enough), laid out per position as ROPE_DIM/2 (cos, sin) pairs.
// Writes dst[step.pos · DST_STRIDE + j]: DST_STRIDE = 0 rotates q into a scratch vector; for k,
// DST_STRIDE = n_kv_heads·head_dim writes straight into this layer's K cache row for the position.
//
// Bindings (group 0):
//   0  uniform (dynamic offset)  Step               { pos, slot }
//   1  storage, read             array<vec2<f32>>   table  ctx · ROPE_DIM/2 (cos, sin)
//   2  storage, read             array<f32>         src    HEADS·HEAD_DIM
//   3  storage, read_write       array<f32>         dst    (ctx ·) HEADS·HEAD_DIM
// Dispatch: (ceil(HEADS·HEAD_DIM/2 / WG), 1, 1), one invocation per pair.
// Overrides: HEADS, HEAD_DIM, ROPE_DIM (even, ≤ HEAD_DIM), DST_STRIDE, WG.

struct Step {
    pos: u32,
    slot: u32,
}

override HEADS: u32;
override HEAD_DIM: u32;
override ROPE_DIM: u32;
override DST_STRIDE: u32 = 0u;
override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> table: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read> src: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let p = gid.x;
    if (p >= HEADS * HEAD_DIM / 2u) {
        return;
    }
    let j = 2u * p;                  // first element of the pair
    let i = (j % HEAD_DIM) / 2u;     // pair index within the head
    let a = src[j];
    let b = src[j + 1u];
    let o = step.pos * DST_STRIDE + j;
    if (2u * i < ROPE_DIM) {
        let cs = table[step.pos * (ROPE_DIM / 2u) + i];
        dst[o] = a * cs.x - b * cs.y;
        dst[o + 1u] = a * cs.y + b * cs.x;
    } else {
        dst[o] = a;
        dst[o + 1u] = b;
    }
}
