// silu_mul.wgsl — out[i] = silu(gate[i]) · up[i], silu(g) = g / (1 + exp(−g))   (the SwiGLU FFN middle)
//
// Bindings (group 0):
//   0  storage, read        array<f32>  gate  N
//   1  storage, read        array<f32>  up    N
//   2  storage, read_write  array<f32>  out   N
// Dispatch: (ceil(N / WG), 1, 1).
// Overrides: N, WG.

override N: u32;
override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> gate: array<f32>;
@group(0) @binding(1) var<storage, read> up: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < N) {
        let g = gate[i];
        out[i] = g / (1.0 + exp(-g)) * up[i];
    }
}
