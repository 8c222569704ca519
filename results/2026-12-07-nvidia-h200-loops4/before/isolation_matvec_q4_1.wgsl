// Isolation experiment: rows [row0, row0 + nrows) of y = W x, W a Q4_1 matrix.
// The same fixed matvec is split into k dispatches over row ranges; every row is computed by the
// same code in the same order whatever k is, so all splits give bit-identical y.
//
// Q4_1 block (20 bytes = 5 u32, 32 weights): u32 0 = f16 d (low half) | f16 m (high half);
// u32 1..4 = 16 bytes of nibbles; weight j < 16 = low nibble of byte j, j + 16 = high nibble;
// w = d * q + m.  Row r, block b starts at u32 (r * nblocks + b) * 5.
//
// Bindings (group 0):
//   0  uniform     Params                     row0, nrows, nblocks
//   1  read        array<u32>                 W: rows * nblocks * 5
//   2  read        array<vec4<f32>>           x: nblocks * 8 (= cols / 4)
//   3  read_write  array<f32>                 y: rows (only [row0, row0 + nrows) written)
// Dispatch: (ceil(nrows / ROWS), 1, 1).  WG / ROWS threads share a row; each thread takes a
// quarter block (8 weights) at a time, then the row's partial sums are reduced in workgroup memory.

struct Params {
  row0: u32,
  nrows: u32,
  nblocks: u32,
  pad: u32,
}

override WG: u32 = 256;    // threads per workgroup (power of two, <= 256)
override ROWS: u32 = 8;    // rows per workgroup (power of two, divides WG)

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> W: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

var<workgroup> partial: array<f32, 256>;

// d * (q . x) + m * sum(x) for one u32 of nibbles: weights col..col+3 (low) and col+16..col+19 (high).
fn quarter(dm: vec2<f32>, qs: u32, xlo: vec4<f32>, xhi: vec4<f32>) -> f32 {
  let lo = vec4<f32>(vec4<u32>(qs, qs >> 8u, qs >> 16u, qs >> 24u) & vec4<u32>(15u));
  let hi = vec4<f32>(vec4<u32>(qs >> 4u, qs >> 12u, qs >> 20u, qs >> 28u) & vec4<u32>(15u));
  let ones = vec4<f32>(1.0);
  return dm.x * (dot(lo, xlo) + dot(hi, xhi)) + dm.y * (dot(xlo, ones) + dot(xhi, ones));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let tpr = WG / ROWS;
  let lane = li % tpr;
  let local_row = wg.x * ROWS + li / tpr;
  let row = p.row0 + local_row;
  var acc = 0.0;
  if (local_row < p.nrows) {
    let items = p.nblocks * 4u;
    for (var it = lane; it < items; it += tpr) {
      let b = it >> 2u;
      let q = it & 3u;
      let base = (row * p.nblocks + b) * 5u;
      let dm = unpack2x16float(W[base]);
      let xi = b * 8u + q;          // vec4 index of column b * 32 + q * 4
      acc += quarter(dm, W[base + 1u + q], x[xi], x[xi + 4u]);
    }
  }
  partial[li] = acc;
  workgroupBarrier();
  for (var s = tpr / 2u; s > 0u; s >>= 1u) {
    if (lane < s) {
      partial[li] += partial[li + s];
    }
    workgroupBarrier();
  }
  if (lane == 0u && local_row < p.nrows) {
    y[row] = partial[li];
  }
}
