// Encode a recorded plan in one call: the JS twin of app/plan.py's replay_python.
// steps: [[pipeline, [bindGroup, ...], x, y, z, offsets|null, keepState], ...] built once by Python.
// keepState (one_pass only): same pipeline and bind groups as the step before, encode just the dispatch.
// Kept deliberately tiny: the difference between this and the Python loop is the FFI cost we measure.
function encodeStep(pass, s, onePass) {
  if (onePass && s[6]) {
    pass.dispatchWorkgroups(s[2], s[3], s[4]);
    return;
  }
  const groups = s[1];
  for (let i = 0; i < groups.length; i++) {
    if (i === 0 && s[5]) pass.setBindGroup(0, groups[0], s[5]);
    else pass.setBindGroup(i, groups[i]);
  }
  pass.setPipeline(s[0]);
  pass.dispatchWorkgroups(s[2], s[3], s[4]);
}

// One step in its own encoder, pass and submit.
function submitOne(device, s) {
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  encodeStep(pass, s);
  pass.end();
  device.queue.submit([enc.finish()]);
}

async function naive(device, steps) {
  for (const s of steps) {
    submitOne(device, s);
    await device.queue.onSubmittedWorkDone();
  }
}

// copies: [[src, srcOffset, dst, dstOffset, size], ...] encoded after the pass(es), in the same command buffer.
function replay(device, steps, mode, querySet, begin, end, copies) {
  if (mode === "naive") return naive(device, steps);
  if (mode === "sequential") {
    for (const s of steps) submitOne(device, s);
    return null;
  }
  const enc = device.createCommandEncoder();
  if (mode === "one_encoder") {
    for (const s of steps) {
      const pass = enc.beginComputePass();
      encodeStep(pass, s);
      pass.end();
    }
  } else if (mode === "one_pass") {
    const desc = querySet ? {timestampWrites: {querySet, beginningOfPassWriteIndex: begin, endOfPassWriteIndex: end}} : undefined;
    const pass = enc.beginComputePass(desc);
    for (const s of steps) encodeStep(pass, s, true);
    pass.end();
  } else {
    throw new Error("unknown replay mode " + mode);
  }
  if (copies) for (const c of copies) enc.copyBufferToBuffer(c[0], c[1], c[2], c[3], c[4]);
  device.queue.submit([enc.finish()]);
  return null;
}

window.dlReplay = {replay};
