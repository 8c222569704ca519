// add.wgsl — x[i] += y[i]   (the residual connection)
//
// Bindings (group 0):
//   0  storage, read_write  array<f32>  x   N  (updated in place)
//   1  storage, read        array<f32>  y   N
// Dispatch: (ceil(N / WG), 1, 1).
// Overrides: N, WG.

override N: u32;
override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < N) {
        x[i] = x[i] + y[i];
    }
}
