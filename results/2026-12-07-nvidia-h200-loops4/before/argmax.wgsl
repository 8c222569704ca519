// argmax.wgsl — greedy sampling in two stages: tokens[step.slot + 1] = argmax(logits)
// (lowest index among equal maxima, like numpy; NaN never wins).
//   entry `stage1`: workgroup g reduces its chunk of logits to one (value, index) pair in parts[g]
//   entry `stage2`: one workgroup reduces the PARTS pairs and writes the token id for the next step
// Both entries share one bind group layout (stage 1 ignores the uniform and tokens).
//
// Bindings (group 0):
//   0  uniform (dynamic offset)  Step               { pos, slot }
//   1  storage, read             array<f32>         logits  N
//   2  storage, read_write       array<Best>        parts   PARTS
//   3  storage, read_write       array<u32>         tokens  (slot → token id)
// Dispatch: stage1 (PARTS, 1, 1); stage2 (1, 1, 1).
// Overrides: N, PARTS, WG (power of two).

struct Step {
    pos: u32,
    slot: u32,
}

struct Best {
    v: f32,
    i: u32,
}

override N: u32;
override PARTS: u32 = 64u;
override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> parts: array<Best>;
@group(0) @binding(3) var<storage, read_write> tokens: array<u32>;

var<workgroup> red: array<Best, WG>;

fn better(a: Best, b: Best) -> Best {
    if (a.v > b.v || (a.v == b.v && a.i < b.i)) {
        return a;
    }
    return b;
}

fn reduce(li: u32, v: Best) -> Best {
    red[li] = v;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k >>= 1u) {
        if (li < k) {
            red[li] = better(red[li], red[li + k]);
        }
        workgroupBarrier();
    }
    return red[0];
}

@compute @workgroup_size(WG)
fn stage1(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    let chunk = (N + PARTS - 1u) / PARTS;
    let end = min(N, (wg.x + 1u) * chunk);
    var b = Best(-0x1.fffffep+127f, N);
    for (var i = wg.x * chunk + li; i < end; i += WG) {
        b = better(Best(logits[i], i), b);
    }
    let r = reduce(li, b);
    if (li == 0u) {
        parts[wg.x] = r;
    }
}

@compute @workgroup_size(WG)
fn stage2(@builtin(local_invocation_index) li: u32) {
    var b = Best(-0x1.fffffep+127f, N);
    for (var i = li; i < PARTS; i += WG) {
        b = better(parts[i], b);
    }
    let r = reduce(li, b);
    if (li == 0u) {
        tokens[step.slot + 1u] = r.i;
    }
}
