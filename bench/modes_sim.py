# The rule of src/analysis/modes.rs, simulated: how often it splits one behaviour
# (false behaviours) and how often it finds two. Run: python3 bench/modes_sim.py
import random, math
def spread(s):
    lo,hi=s[0],s[-1]
    if hi<=lo: return 0.0
    if lo<=0: return math.inf
    return hi/lo-1
def factor(n): return 8 if n<6 else (4 if n<8 else 3)
def widest(s,m):
    n=len(s); gaps=sorted([(i,spread(s[i-1:i+1])) for i in range(2,n-1)],key=lambda x:-x[1])
    cuts=[]
    for i,_ in gaps:
        if len(cuts)==m: break
        if all(abs(c-i)>=2 for c in cuts): cuts.append(i)
    return sorted(cuts) if len(cuts)==m else None
def split(s,out):
    n=len(s)
    for m in range(1,n//2):
        cuts=widest(s,m)
        if cuts is None: break
        b=[0]+cuts+[n]; parts=[s[b[k]:b[k+1]] for k in range(len(b)-1)]
        within=max(spread(p) for p in parts); nar=min(spread(s[i-1:i+1]) for i in cuts)
        if nar>=0.02 and nar>=factor(n)*within:
            for p in parts: split(p,out)
            return
    out.append(s)
def groups(v):
    if len(v)<4: return []
    out=[]; split(sorted(v),out); return out if len(out)>1 else []
random.seed(3)
for dist in ["normal5","lognormal8","expo-tail","uniform"]:
  row=[]
  for n in [4,5,6,8,10,20]:
      T=20000; fp=0
      for _ in range(T):
        if dist=="normal5": v=[random.gauss(100,5) for _ in range(n)]
        elif dist=="lognormal8": v=[math.exp(random.gauss(0,0.08)) for _ in range(n)]
        elif dist=="uniform": v=[random.uniform(100,110) for _ in range(n)]
        else: v=[100+random.expovariate(1/5) for _ in range(n)]
        fp+=bool(groups(v))
      row.append((n,round(100*fp/T,2)))
  print(dist,row)
for name,(a,sa,b,sb) in {"faults":(176,5,283,8),"wall":(1.2,.05,2.6,.1)}.items():
  row=[]
  for n in [4,6,10]:
    T=4000; hit=0
    for _ in range(T):
      v=[random.gauss(a,sa) for _ in range(n//2)]+[random.gauss(b,sb) for _ in range(n-n//2)]
      hit+=len(groups(v))==2
    row.append((n,round(100*hit/T,1)))
  print(name,row)
