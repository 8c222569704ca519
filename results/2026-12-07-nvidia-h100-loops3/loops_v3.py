"""v3 from v2, as loops3.sh makes it on the device: python3 results/2026-12-07-nvidia-h100-loops3/loops_v3.py wgsl/resident.wgsl OUT.wgsl

In every constant-bounded loop whose bound is a ceiling division by WG (or IT_MAX), and whose body has no barrier
and no `continue`, the early `if (X >= Y) { break; }` at the body's top level becomes a guard around the rest of the
body.  The index grows with the loop's counter, so the guard is false from the first iteration where the break was
taken onward, and the loop does the same work; only its trip count becomes a constant."""
import re, sys
src = open(sys.argv[1]).read()
out, pos, n = [], 0, 0
hdr = re.compile(r"for \(var k_ = \d+u; k_ < ([^;]*(?:IT_MAX|WG - 1u\) / WG)[^;]*); k_\+\+\) \{")
brk = re.compile(r"if \(([^;{}]+?) >= ([^;{}]+?)\) \{ break; \}")
while True:
    m = hdr.search(src, pos)
    if not m:
        break
    i = m.end(); depth = 1; j = i
    while depth:
        c = src[j]
        depth += c == "{"; depth -= c == "}"
        j += 1
    body = src[i:j - 1]                     # between the loop's braces
    # the break at depth 0 of the body
    d = 0; k = 0; hit = None
    while k < len(body):
        if d == 0:
            b = brk.match(body, k)
            if b: hit = b; break
        d += body[k] == "{"; d -= body[k] == "}"
        k += 1
    if hit is None or "workgroupBarrier" in body or "continue" in body:
        out.append(src[pos:j]); pos = j; continue
    rest = body[hit.end():]
    tail = rest.rstrip(); ws = rest[len(tail):]
    new = body[:hit.start()] + f"if ({hit.group(1)} < {hit.group(2)}) {{" + tail + " }" + ws
    out.append(src[pos:i] + new + "}"); pos = j; n += 1
out.append(src[pos:])
open(sys.argv[2], "w").write("".join(out))
print(n, "loops guarded", file=sys.stderr)
