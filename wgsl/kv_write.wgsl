// kv_write.wgsl — dst[step.pos · N + i] = src[i]: append this position's V vector to a layer's V cache.
//
// Bindings (group 0):
//   0  uniform (dynamic offset)  Step         { pos, slot }
//   1  storage, read             array<f32>   src   N
//   2  storage, read_write       array<f32>   dst   ctx · N  (this layer's V cache)
// Dispatch: (ceil(N / WG), 1, 1).
// Overrides: N, WG.

struct Step {
    pos: u32,
    slot: u32,
}

override N: u32;
override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < N) {
        dst[step.pos * N + i] = src[i];
    }
}
