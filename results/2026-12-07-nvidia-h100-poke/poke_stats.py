# Pooled statistics over a/res and b/res (run from the repo root): python3 results/2026-12-07-nvidia-h100-poke/poke_stats.py
import json,glob,statistics as st,re
D='results/2026-12-07-nvidia-h100-poke'
rows={}
for f in sorted(glob.glob(D+'/*/res/*.json')):
    n=f.split('/')[-1][:-5]
    if n=='w0': continue
    c,i=n.split('_'); p=json.load(open(f))['amortize']['plans'][0]
    B=[]; first=[]; lastlag=[]
    for r in p['block_timing_runs']:
        g=r['block_gpu_ms']; gap=r['block_gpu_gap_ms']; rd=r['block_read_ms']
        B.append(rd[-1]-sum(g)-sum(gap)); first.append(rd[0])
        lastlag.append(rd[-1]-sum(g)-sum(gap)-(r['block_sent_ms'][0]))
    rows.setdefault(c,[]).append(dict(i=int(i),runs=p['decode_tok_per_s_runs'],after=p['decode_after_first_runs'],ttft=p['ttft_ms'],B=B,first=first,med=p['decode_tok_per_s'],gpu=p['gpu_ms_per_token']))
def m(x): return st.median(x)
for c in ['none','write','submit','snone','swrite']:
    R=rows[c]; allr=[x for r in R for x in r['runs']]; alla=[x for r in R for x in r['after']]
    allB=[x for r in R for x in r['B']]; allf=[x for r in R for x in r['first']]
    print(f"{c:7s} n={len(allr):2d} tok/s med {m(allr):7.1f} mean {st.mean(allr):7.1f} | round-medians {m([r['med'] for r in R]):7.1f} | after1st med {m(alla):7.1f} | B med {m(allB):.2f} mean {st.mean(allB):.2f} | first read med {m(allf):.3f} | ttft med {m([r['ttft'] for r in R]):.2f} | gpu {m([r['gpu'] for r in R]):.4f}")
# paired by round
for a,b in [('none','write'),('snone','swrite'),('none','submit')]:
    d=[]
    for r in rows[a]:
        s=[x for x in rows[b] if x['i']==r['i']]
        if s: d.append(s[0]['med']-r['med'])
    print(a,b,'paired round-median diffs', [round(x,1) for x in d], 'median', round(m(d),1))
print()
for c in ['none','write','submit','snone','swrite']:
    L0=[];LL=[]
    for f in sorted(glob.glob(D+f'/*/res/{c}_*.json')):
        p=json.load(open(f))['amortize']['plans'][0]
        for r in p['block_timing_runs']:
            g=r['block_gpu_ms']; gap=r['block_gpu_gap_ms']; rd=r['block_read_ms']; s=r['block_sent_ms']
            L0.append(rd[0]-s[0]-g[0])
            LL.append(rd[-1]-s[0]-sum(g)-sum(gap))
    print(f"{c:7s} first-block lag med {m(L0):.3f} p90 {sorted(L0)[int(.9*len(L0))]:.3f} | end lag med {m(LL):.3f} p90 {sorted(LL)[int(.9*len(LL))]:.3f}")
print()
for c in ['none','write','submit','snone','swrite']:
    R=rows[c]; meds=[r['med'] for r in R]; af=[m(r['after']) for r in R]
    pk=[]
    for f in sorted(glob.glob(D+f'/*/res/{c}_*.json')):
        p=json.load(open(f))['amortize']['plans'][0]; pk+=p.get('pokes_runs') or []
    print(c, 'rounds', len(R), 'median of round medians', round(m(meds),1), 'range', round(min(meds),1), round(max(meds),1), 'after1st', round(m(af),1), round(min(af),1), round(max(af),1), 'pokes', (min(pk),max(pk)) if pk else '')
