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
// encode (one_encoder and one_pass modes): the finished command buffer, not submitted.
function encode(device, steps, mode, querySet, begin, end, copies) {
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
  return enc.finish();
}

function replay(device, steps, mode, querySet, begin, end, copies) {
  if (mode === "naive") return naive(device, steps);
  if (mode === "sequential") {
    for (const s of steps) submitOne(device, s);
    return null;
  }
  device.queue.submit([encode(device, steps, mode, querySet, begin, end, copies)]);
  return null;
}

// Resolve as `promise` does; until then send an empty queue submit (or, with scratch, a 4-byte writeBuffer) at most
// every `everyUs` microseconds and return how many were sent.  Chromium's GPU process looks for finished GPU work right after it handles a
// command flush, otherwise only on a timer every 1-2 ms, so a readback that no further command follows waits
// for that timer.  Between checks it yields as a background-priority task, which runs only when no other task
// is waiting (a MessageChannel loop starves the readback's own reply in Chromium); setTimeout where the
// Prioritized Task Scheduling API is missing.
function idle() {
  if (globalThis.scheduler && scheduler.postTask) return new Promise((r) => scheduler.postTask(r, {priority: "background"}));
  return new Promise((r) => setTimeout(r, 0));
}

async function pokeLoop(queue, state, everyUs, scratch) {
  const word = new Uint32Array([0]);
  let last = -Infinity;
  while (!state.done) {
    const now = performance.now();
    if ((now - last) * 1000 >= everyUs) {
      if (scratch) queue.writeBuffer(scratch, 0, word);
      else queue.submit([]);
      state.pokes++;
      last = now;
    }
    await idle();
  }
}

// The result settles with `promise` itself, so a starved loop can only send fewer submits, never delay it.
// Everything starts from a microtask, after the caller's FFI call has returned: the loop started inside a call
// from Pyodide 0.27 while a mapAsync promise was pending ended in a fatal Pyodide error ("Object has already
// been destroyed", a PyodideFuture).
// scratch: a 4-byte COPY_DST buffer: each poke is a 4-byte writeBuffer into it instead of an empty submit (cheaper
// for the GPU process; results/2026-12-07-nvidia-h100-readback).
function pokeUntil(queue, promise, everyUs, scratch) {
  return new Promise((resolve, reject) => queueMicrotask(() => {
    const state = {done: false, pokes: 0};
    promise.then(() => { state.done = true; resolve(state.pokes); }, (e) => { state.done = true; reject(e); });
    pokeLoop(queue, state, everyUs, scratch);
  }));
}

window.dlReplay = {replay, encode, pokeUntil, idle};
