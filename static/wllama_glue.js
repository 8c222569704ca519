// wllama (llama.cpp in WebAssembly, @wllama/wllama 3.13.0) as a comparison engine: window.dlWllama.
// Loads the vendored ESM + wasm only (setCompat(null): no CDN), one model at a time, and returns plain
// objects (never throws across the FFI: failures come back as {ok: false, error}).
// GPU use is read from llama.cpp's own log, because wllama falls back to CPU silently when the
// adapter lacks shader-f16: "offloaded N/N layers to GPU" is the only proof of a GPU run.

const VENDOR = new URL("../vendor/wllama/index.js", import.meta.url).href;
const WASM = new URL("../vendor/wllama/wllama.wasm", import.meta.url).href;
const OFFLOAD_RE = /offloaded (\d+)\/(\d+) layers to GPU/;

let lib = null;          // the imported module
let inst = null;         // the one loaded Wllama instance
let log = [];            // text lines from wllama and llama.cpp for the current instance
const blobs = new Map(); // url -> Blob of the GGUF, fetched once per page

function text(args) {
  return args.map((a) => (typeof a === "string" ? a : safeJSON(a))).join(" ");
}

function safeJSON(a) {
  try { return a instanceof Error ? `${a.name}: ${a.message}` : JSON.stringify(a); } catch (e) { return String(a); }
}

function errText(e) {
  if (!e) return "unknown error";
  return (e.name && e.name !== "Error" ? e.name + ": " : "") + (e.message || String(e));
}

// wllama 3.13.0 never settles loadModel when its wasm aborts (e.g. a wasm that fails to compile): the
// abort only shows in the log, so an "Aborted(" line fails the pending call at once.
let onFatal = null;

function keep(line) {
  log.push(line);
  if (onFatal && /Aborted\(/.test(line)) onFatal(new Error("wllama aborted: " + line.replace(/^ERROR /, "")));
}

// Collect everything (debug included: llama.cpp's INFO lines arrive as debug).
const logger = {
  debug: (...a) => keep(text(a)),
  log: (...a) => keep(text(a)),
  warn: (...a) => keep("WARN " + text(a)),
  error: (...a) => keep("ERROR " + text(a)),
};

async function lib_() {
  if (!lib) lib = await import(VENDOR);
  return lib;
}

// What this browser offers wllama, checked before any load so a row can say why it cannot run.
async function capabilities() {
  const caps = {
    jspi: typeof WebAssembly.Suspending === "function",
    cross_origin_isolated: !!globalThis.crossOriginIsolated,
    shared_array_buffer: typeof SharedArrayBuffer === "function",
    hardware_concurrency: navigator.hardwareConcurrency || 1,
    webgpu: !!navigator.gpu,
    shader_f16: false,
    adapter: null,
    version: null,
  };
  try {
    caps.version = (await lib_()).Wllama.getLibllamaVersion();
  } catch (e) {
    caps.import_error = `cannot load ${VENDOR}: ${errText(e)}`;
  }
  if (navigator.gpu) {
    try {
      const a = await navigator.gpu.requestAdapter();
      if (a) {
        caps.shader_f16 = a.features.has("shader-f16");
        const i = a.info || {};
        caps.adapter = {vendor: i.vendor || "", architecture: i.architecture || "",
                        is_fallback: !!(i.isFallbackAdapter ?? a.isFallbackAdapter)};
      }
    } catch (e) { caps.adapter_error = errText(e); }
  }
  return caps;
}

// Where the weights went, from llama.cpp's load log.
function placement(lines) {
  let offloaded = null;
  let cpuBuffer = false;
  for (const l of lines) {
    const m = l.match(OFFLOAD_RE);
    if (m) offloaded = [Number(m[1]), Number(m[2])];
    if (l.includes("CPU model buffer size")) cpuBuffer = true;
  }
  const on_gpu = !!offloaded && offloaded[0] > 0 && offloaded[0] === offloaded[1];
  return {offloaded, cpu_model_buffer: cpuBuffer, on_gpu};
}

async function unload() {
  const w = inst;
  inst = null;
  if (!w) return {ok: true};
  try { await w.exit(); return {ok: true}; } catch (e) { return {ok: false, error: errText(e)}; }
}

// Settle with promise, or reject after ms or on a wasm abort seen in the log (the caller then unloads,
// which terminates wllama's worker).
function within(promise, ms, what) {
  let timer;
  const guard = new Promise((_, rej) => {
    onFatal = rej;
    if (ms) timer = setTimeout(() => rej(new Error(`${what} took longer than ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, guard]).finally(() => { clearTimeout(timer); onFatal = null; });
}

// The GGUF as a Blob, fetched once. We hand wllama the Blob (loadModel) rather than the URL
// (loadModelFromUrl), because the URL path copies 98 MB into the origin's OPFS cache for good
// and adds download time to the first load only; this way every load starts from the same bytes.
async function modelBlob(url) {
  if (blobs.has(url)) return {blob: blobs.get(url), fetch_ms: 0};
  const t0 = performance.now();
  const r = await fetch(url);
  if (!r.ok) throw new Error(`HTTP ${r.status} for ${url}`);
  const blob = await r.blob();
  blobs.set(url, blob);
  return {blob, fetch_ms: performance.now() - t0};
}

// opts: {url, n_ctx, n_gpu_layers, n_threads, timeout_ms, wasm_url (tests only: default the vendored wasm)}
async function load(opts) {
  await unload();
  log = [];
  let fetch_ms = null;
  try {
    const got = await modelBlob(opts.url);
    fetch_ms = got.fetch_ms;
    const {Wllama} = await lib_();
    const t0 = performance.now();
    const w = new Wllama({default: opts.wasm_url || WASM}, {logger});
    w.setCompat(null);  // otherwise its compatibility build is fetched from a CDN
    inst = w;
    await within(w.loadModel([got.blob], {n_ctx: opts.n_ctx, n_gpu_layers: opts.n_gpu_layers,
                                          n_threads: opts.n_threads}), opts.timeout_ms, "wllama load");
    const load_ms = performance.now() - t0;
    const info = w.getLoadedContextInfo();
    return {ok: true, load_ms, fetch_ms, threads: w.getNumThreads(), multithread: w.isMultithread(),
            add_bos: !!info.add_bos_token, n_ctx: info.n_ctx, ...placement(log), log: log.slice()};
  } catch (e) {
    await unload();
    return {ok: false, error: errText(e), fetch_ms, log: log.slice(), ...placement(log)};
  }
}

// Token ids of a completion chunk (llama-server puts them in logprobs when asked for logprobs).
function chunkIds(c) {
  const lp = c && c.choices && c.choices[0] && c.choices[0].logprobs;
  if (!lp) return [];
  if (Array.isArray(lp.content)) return lp.content.map((t) => t.id);
  return [];
}

// opts: {prompt, n_predict, timeout_ms}. Greedy, no prompt cache, streamed so the first token can be timed.
async function complete(opts) {
  if (!inst) return {ok: false, error: "no wllama model loaded"};
  const ids = [];
  const stamps = [];  // arrival time of each token (chunks may carry several)
  let text = "", last = null, finish = null;
  const t0 = performance.now();
  try {
    await within(inst.createCompletion({
      prompt: opts.prompt, max_tokens: opts.n_predict, n_predict: opts.n_predict,
      temperature: 0, temp: 0, top_k: 1, cache_prompt: false, logprobs: 1, stream: true,
      onData: (c) => {
        const now = performance.now();
        const got = chunkIds(c);
        for (const id of got) { ids.push(id); stamps.push(now); }
        const ch = c.choices && c.choices[0];
        if (ch) { text += ch.text || ""; finish = ch.finish_reason || finish; }
        last = c;
      },
    }), opts.timeout_ms, "wllama completion");
  } catch (e) {
    await unload();  // a failed or hung completion leaves the worker unusable
    return {ok: false, error: errText(e), token_ids: ids, text};
  }
  const total_ms = performance.now() - t0;
  const timings = (last && last.timings) || null;
  const out = {ok: true, token_ids: ids, text, finish_reason: finish, total_ms, timings,
               ttft_ms: stamps.length ? stamps[0] - t0 : null, decode_tok_per_s: null};
  // Wall-clock decode rate after the first token: the compare suite's rate for every engine, ours included
  // (decode_after_first_tok_per_s in app/llm/generate.py).
  if (stamps.length > 1 && stamps[stamps.length - 1] > stamps[0]) {
    out.decode_tok_per_s = (stamps.length - 1) / ((stamps[stamps.length - 1] - stamps[0]) / 1000);
  }
  if (!ids.length) out.error = "wllama returned no token ids (logprobs missing from its chunks)";
  return out;
}

function lastLog(n = 200) { return log.slice(-n); }

window.dlWllama = {capabilities, load, complete, unload, placement, lastLog, VENDOR, WASM};
