// dispatch_f16.wgsl: the trivial kernel of the dispatch-overhead benchmark (app/bench/dispatch.py),
// in half precision; needs the "shader-f16" feature (the suite marks f16 unsupported without it).
// Computes data[i] += 1.0h, wrapping to 0 after 1024: f16 holds integers exactly only up to 2048, so
// a plain counter would stall there.  After k dispatches every element equals k mod 1025; the suite
// reads the buffer back once at the end to prove that every timed dispatch really ran.
//
// Bindings (group 0):
//   index  access      type                 shape
//   0      read_write  storage array<f16>   [n] counters (n = 256 in the suite)
//
// Dispatch grid: (ceil(n / WG), 1, 1) workgroups.
// Uniforms: none.  Overrides: WG = workgroup size (default 64).

enable f16;

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> data: array<f16>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&data)) {
        let v = data[i];
        data[i] = select(v + 1.0h, 0.0h, v >= 1024.0h);
    }
}
