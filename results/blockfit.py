"""Fit each block-loop run's per-block GPU times (bench JSON, block_timing_runs) by least squares:
t = a + b·L + c·R, where L is the block's tokens and R the sum over its tokens of their completed 32-position
attention rounds (position // 32); a is GPU time per block beyond its tokens, b per token, c per token per round.
Prints the medians over a row's runs.  Usage: python3 results/blockfit.py PROMPT_LEN FILE.json...
(PROMPT_LEN: the prompt's tokens, so that the first decoded token is at position PROMPT_LEN − 1.)"""
import json, sys, numpy as np
plen = int(sys.argv[1])
for f in sys.argv[2:]:
    d = json.load(open(f))
    for p in d['amortize']['plans']:
        fits = []
        for r in p.get('block_timing_runs') or []:
            g, L = r['block_gpu_ms'], r['block_lengths']
            if not isinstance(g, list):
                continue
            n = min(len(g), len(L)); pos = np.cumsum([0] + list(L[:n])) + plen - 1
            R = [sum(q // 32 for q in range(pos[i], pos[i] + L[i])) for i in range(n)]
            A = np.vstack([np.ones(n), np.array(L[:n]), np.array(R)]).T
            fits.append(np.linalg.lstsq(A, np.array(g[:n]), rcond=None)[0])
        if fits:
            a, b, c = np.median(np.array(fits), axis=0)
            print(f.split('/')[-1], p['driver'], 'K', p.get('k'), 'runs', len(fits),
                  'per block %.1f us, per token %.4f ms, per round %.1f us' % (a * 1000, b, c * 1000))
