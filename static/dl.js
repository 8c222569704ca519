// Small browser helpers that Python calls through the FFI (window.dl). No measured path lives here.
const $ = (id) => document.getElementById(id);

function setStatus(state, text) {
  const el = $("status");
  el.dataset.state = state;
  el.textContent = text;
}

function setProgress(fraction, text) {
  const bar = $("progress-bar"), label = $("progress-text");
  if (fraction === null || fraction === undefined) bar.removeAttribute("value");
  else bar.value = Math.max(0, Math.min(1, fraction));
  if (text !== undefined) label.textContent = text;
}

function showError(title, detail, help) {
  const box = $("error");
  box.hidden = false;
  box.querySelector(".title").textContent = title;
  box.querySelector(".detail").textContent = detail || "";
  box.querySelector(".help").textContent = help || "";
}

function hideError() { $("error").hidden = true; }

async function postJSON(path, obj) {
  try {
    const r = await fetch(path, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(obj)});
    return r.ok;
  } catch (e) { return false; }
}

// Smallest observable step of performance.now(), in microseconds.
function timerResolutionUs(samples = 2000) {
  let best = Infinity, last = performance.now();
  for (let i = 0; i < samples; i++) {
    let t = performance.now();
    while (t === last) t = performance.now();
    best = Math.min(best, t - last);
    last = t;
  }
  return best * 1000;
}

async function sha256Hex(buffer) {
  const d = await crypto.subtle.digest("SHA-256", buffer);
  return Array.from(new Uint8Array(d)).map((b) => b.toString(16).padStart(2, "0")).join("");
}

// Fetch a URL into an ArrayBuffer, reporting (loaded, total) as it streams.
async function fetchWithProgress(url, onProgress) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`HTTP ${r.status} for ${url}`);
  const total = Number(r.headers.get("Content-Length")) || 0;
  const reader = r.body.getReader();
  const chunks = [];
  let loaded = 0;
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.length;
    if (onProgress) onProgress(loaded, total);
  }
  const out = new Uint8Array(loaded);
  let off = 0;
  for (const c of chunks) { out.set(c, off); off += c.length; }
  return out.buffer;
}

function download(filename, text, mime) {
  const url = URL.createObjectURL(new Blob([text], {type: mime}));
  const a = document.createElement("a");
  a.href = url; a.download = filename;
  document.body.appendChild(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

async function readFiles(input) {
  const out = [];
  for (const f of input.files) out.push([f.name, await f.text()]);
  return out;
}

const store = {
  get(key) { try { return localStorage.getItem(key); } catch (e) { return null; } },
  set(key, value) { try { localStorage.setItem(key, value); return true; } catch (e) { return false; } },
  remove(key) { try { localStorage.removeItem(key); } catch (e) { /* ignore */ } },
};

window.dl = {setStatus, setProgress, showError, hideError, postJSON, timerResolutionUs, sha256Hex,
             fetchWithProgress, download, readFiles, store};
window.addEventListener("error", (e) => {
  if ($("status").dataset.state === "loading") showError("The page failed to start", String(e.message || e), "");
});
