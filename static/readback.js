// Readback latency: how late the page learns that GPU work has finished, and whether the page can shorten it.
// app/bench/readback.py drives it and does the statistics; everything timed happens here, in one call, so that no
// Python runs (and no Pyodide proxy is touched) while a mapAsync promise is pending.
//
// One trial: one command buffer (a compute pass of the rig's dispatches with timestampWrites around it, then a 4-byte
// copy into a MAP_READ buffer), submitted; mapAsync on that buffer; then wait with a strategy until it resolves.
// wall = submit → resolved (performance.now).  The caller subtracts the pass's GPU time (timestamps) from wall.
// Strategies, what the page does while it waits:
//   none    nothing: await the promise.
//   submit  an empty queue.submit every `everyUs` µs (the LLM loop's `poke`).
//   write   a 4-byte queue.writeBuffer into a scratch buffer every `everyUs` µs.
//   timed   ONE empty queue.submit `leadMs` before the pass is expected to end (`expectMs` after the submit).
// Between checks the wait yields as a background-priority task (replay.js idle()).

async function trial(device, steps, querySet, slot, src, dst, scratch, word, s) {
  const cmd = dlReplay.encode(device, steps, "one_pass", querySet, 2 * slot, 2 * slot + 1, [[src, 0, dst, 0, 4]]);
  const t0 = performance.now();
  device.queue.submit([cmd]);
  const mapped = dst.mapAsync(GPUMapMode.READ, 0, 4);
  let pokes = 0;
  if (s.strategy !== "none") {
    const state = {done: false};
    mapped.then(() => { state.done = true; }, () => { state.done = true; });
    let last = -Infinity;
    while (!state.done) {
      const now = performance.now();
      if (s.strategy === "timed") {
        if (pokes === 0 && now - t0 >= s.expectMs - s.leadMs) { device.queue.submit([]); pokes++; }
      } else if ((now - last) * 1000 >= s.everyUs) {
        if (s.strategy === "submit") device.queue.submit([]);
        else device.queue.writeBuffer(scratch, 0, word);
        pokes++;
        last = now;
      }
      await dlReplay.idle();
    }
  }
  await mapped;
  const wall = performance.now() - t0;
  dst.unmap();
  return [wall, pokes];
}

// order: [[strategyIndex, slot], ...] (the caller interleaves); strategies: [{strategy, everyUs, leadMs, expectMs}].
// Resolves to {wall: [ms per order entry], pokes: [...]}; the query set's slots 2·slot, 2·slot + 1 hold each
// trial's pass timestamps.  Starts from a microtask, after the caller's FFI call has returned (see pokeUntil).
function run(device, steps, querySet, src, dst, scratch, strategies, order) {
  return new Promise((resolve, reject) => queueMicrotask(async () => {
    try {
      const word = new Uint32Array([0]);
      const wall = [], pokes = [];
      for (const [i, slot] of order) {
        const [w, p] = await trial(device, steps, querySet, slot, src, dst, scratch, word, strategies[i]);
        wall.push(w);
        pokes.push(p);
      }
      resolve({wall, pokes});
    } catch (e) {
      reject(e);
    }
  }));
}

window.dlReadback = {run};
