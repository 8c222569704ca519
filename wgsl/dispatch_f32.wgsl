// dispatch_f32.wgsl: the trivial kernel of the dispatch-overhead benchmark (app/bench/dispatch.py).
// Computes data[i] += 1.0 for every element, so after k dispatches every element equals k; the suite
// reads the buffer back once at the end to prove that every timed dispatch really ran.
// Its own work is negligible next to the submission overhead being measured.
//
// Bindings (group 0):
//   index  access      type                 shape
//   0      read_write  storage array<f32>   [n] counters (n = 256 in the suite)
//
// Dispatch grid: (ceil(n / WG), 1, 1) workgroups.
// Uniforms: none.  Overrides: WG = workgroup size (default 64).

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> data: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&data)) {
        data[i] = data[i] + 1.0;
    }
}
