// probe_safety.wgsl — what the browser's WebGPU does for two of its safety guarantees (app/environment.py,
// app/adapter.py safety_facts).  They cost GPU time in every dispatch, and a browser flag
// (--enable-dawn-features=disable_robustness,disable_workgroup_init) can turn them off, so results record which ran.
//   entry `oob`:  out[1] = src[out[0]], where src is bound as its first 4 words (16 bytes) of a larger buffer whose
//                 word i holds OOB_BASE + i, and the host puts 5 in out[0].  Clamped to the binding: OOB_BASE + 3;
//                 zeroed by a bounds check (the shader's or the driver's, this cannot tell which): 0; no check:
//                 OOB_BASE + 5 (the word itself).
//   entry `fill`: every invocation of every workgroup writes a pattern into workgroup memory (kept live by out[2]).
//   entry `peek`: reads that workgroup memory BEFORE writing it: out[3 + wg·64 + li].  Zero-initialized (WebGPU's
//                 guarantee): all 0; without it, the leftovers of `fill` (or whatever was there) show.
// Bindings (group 0): 0 storage read array<u32> src (bound 16 bytes); 1 storage read_write array<u32> out.

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

var<workgroup> s: array<u32, 64>;

@compute @workgroup_size(1)
fn oob() {
    out[1] = src[out[0]];
}

@compute @workgroup_size(64)
fn fill(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    s[li] = 0xa5a50000u + li;
    workgroupBarrier();
    if (li == 0u && wg.x == 0u) { out[2] = s[63]; }
}

@compute @workgroup_size(64)
fn peek(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    out[3u + wg.x * 64u + li] = s[li];
    workgroupBarrier();
    s[li] = 0u;
}
