// embed_q8_0.wgsl — x = token_embd[tokens[step.slot]], one Q8_0 row dequantized (w = d·q).
//
// E is the GGUF tensor's bytes as stored: VOCAB rows of COLS/32 blocks of 34 bytes (f16 d, 32 × int8).
// Blocks are not word aligned, so each element is read by byte offset from the u32 words.
// The token id comes from the GPU buffer `tokens` (CPU-written, or written by argmax for the next
// step), and the slot from the per-step uniform, so the same recorded dispatch serves every step.
//
// Bindings (group 0):
//   0  uniform (dynamic offset)  Step              { pos, slot }  — 256-byte slots, one per step
//   1  storage, read             array<u32>        tokens  (slot → token id)
//   2  storage, read             array<u32>        E       VOCAB·COLS/32·34 bytes
//   3  storage, read_write       array<f32>        x       COLS
// Dispatch: (ceil(COLS / WG), 1, 1), one invocation per element.
// Overrides: COLS (multiple of 32), WG.

struct Step {
    pos: u32,
    slot: u32,
}

override COLS: u32;
override WG: u32 = 64u;

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read> E: array<u32>;
@group(0) @binding(3) var<storage, read_write> x: array<f32>;

fn byte_at(o: u32) -> u32 {
    return (E[o >> 2u] >> ((o & 3u) * 8u)) & 0xffu;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= COLS) {
        return;
    }
    let token = tokens[step.slot];
    let block = (token * (COLS / 32u) + i / 32u) * 34u;   // byte offset of the block
    let d = unpack2x16float(E[block >> 2u])[(block >> 1u) & 1u];  // blocks start on even bytes
    let q = bitcast<i32>(byte_at(block + 2u + i % 32u) << 24u) >> 24u;
    x[i] = d * f32(q);
}
