// rmsnorm.wgsl — y = x / sqrt(mean(x²) + EPS) · w   (llama RMSNorm over one vector)
//
// Bindings (group 0):
//   0  storage, read        array<f32>  x   N
//   1  storage, read        array<f32>  w   N  (the F32 norm weight)
//   2  storage, read_write  array<f32>  y   N
// Dispatch: (1, 1, 1) — one workgroup; each invocation sums a strided slice, then a tree reduction.
// Overrides: N, EPS, WG (power of two).

override N: u32;
override EPS: f32 = 1e-5;
override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) li: u32) {
    var s = 0.0;
    for (var i = li; i < N; i += WG) {
        s += x[i] * x[i];
    }
    partial[li] = s;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k >>= 1u) {
        if (li < k) {
            partial[li] += partial[li + k];
        }
        workgroupBarrier();
    }
    let scale = 1.0 / sqrt(partial[0] / f32(N) + EPS);
    for (var i = li; i < N; i += WG) {
        y[i] = (x[i] * scale) * w[i];
    }
}
