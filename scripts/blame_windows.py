#!/usr/bin/env python3
"""Does a repository's history point at the lines a task changes?

Mines up to N tasks from git alone (non-merge commits changing one to three existing non-test
source files, a subject of three or more words), and ranks the 40-line windows of each gold
file (at the parent) by: BM25 of the window against the goal (`bm25`); the lines last changed
(`git blame`) by past commits whose message resembles the goal (`hist`); the lines last
changed by any of the last 300 commits (`churn`), weighted by how recent (`recency`); and
blends of them. Prints how often the first (and first two) windows hold a changed line, and
the share of windows that do (`base_rate`).

Usage: scripts/blame_windows.py REPO [N]
"""
import math, re, subprocess, sys, collections, json

SRC = ('.rs','.py','.go','.ts','.tsx','.js','.jsx','.java','.c','.h','.cc','.cpp','.rb','.kt','.swift','.cs','.php','.scala','.mjs','.cjs','.vue','.svelte')
def git(repo, *a, inp=None):
    return subprocess.run(['git','-C',repo,*a],capture_output=True,input=inp).stdout.decode('utf-8','replace')
def words(s):
    s = re.sub(r'([a-z0-9])([A-Z])', r'\1 \2', s)
    return [w for w in re.findall(r'[a-z0-9]+', s.lower()) if len(w) > 1]
STOP=set('the a an to of in and or for is on with be by this that from it as at not are was'.split())
def terms(s): return [w for w in words(s) if w not in STOP]
def is_test(p): return bool(re.search(r'(^|/)(tests?|testdata|fixtures?|__tests__|spec)/|_test\.|test_|\.test\.|\.spec\.', p))

def mine(repo, n):
    out = git(repo,'log','--no-merges','--format=%x01%H %P%x02%s%n%b%x03','--name-status','-2000','HEAD')
    tasks=[]
    for rec in out.split('\x01')[1:]:
        head, rest = rec.split('\x02',1); msg, files = rest.split('\x03',1)
        sha, *par = head.split()
        if len(par)!=1: continue
        st=[l.split('\t') for l in files.strip().splitlines() if l.strip()]
        if not st or len(st)>3 or any(s[0]!='M' for s in st): continue
        paths=[s[1] for s in st]
        if any(not p.endswith(SRC) or is_test(p) for p in paths): continue
        subj=msg.strip().splitlines()[0] if msg.strip() else ''
        if len(terms(subj))<3: continue
        tasks.append((sha,par[0],msg.strip(),paths))
        if len(tasks)>=n: break
    return tasks

def hunks(repo, parent, sha, path):
    d=git(repo,'diff','-U0','--no-color',parent,sha,'--',path)
    out=[]
    for m in re.finditer(r'^@@ -(\d+)(?:,(\d+))? \+', d, re.M):
        s=int(m.group(1)); c=int(m.group(2)) if m.group(2) is not None else 1
        out.append((s, s+c-1) if c>0 else (s, s+1))  # insertion: line it follows and next
    return out

def blame(repo, parent, path):
    b=git(repo,'blame','--porcelain','-w',parent,'--',path)
    shas=[]; 
    for l in b.splitlines():
        m=re.match(r'^([0-9a-f]{40}) \d+ (\d+)', l)
        if m: shas.append(m.group(1))
    return shas

def bm25_scores(docs, q):
    N=len(docs); avg=sum(len(d) for d in docs)/max(N,1)
    df=collections.Counter(t for d in docs for t in set(d))
    out=[]
    for d in docs:
        tf=collections.Counter(d); s=0
        for t in set(q):
            if tf[t]: s+=math.log(1+(N-df[t]+.5)/(df[t]+.5))*tf[t]*2.2/(tf[t]+1.2*(.25+.75*len(d)/max(avg,1)))
        out.append(s)
    return out

def main():
    repo=sys.argv[1]; n=int(sys.argv[2]) if len(sys.argv)>2 else 40
    W=40
    res=collections.defaultdict(list)
    for sha,parent,msg,paths in mine(repo,n):
        goal=terms(msg)
        past=git(repo,'log','--format=%x01%H%x02%B','-300',parent).split('\x01')[1:]
        pmsg={p.split('\x02',1)[0]:terms(p.split('\x02',1)[1]) for p in past}
        ids=list(pmsg); ms=bm25_scores([pmsg[i] for i in ids], goal)
        perfect=max(ms+[1e-9])
        sim={i:s/perfect for i,s in zip(ids,ms)}
        rank={i:k for k,i in enumerate(ids)}
        for path in paths:
            hs=hunks(repo,parent,sha,path)
            if not hs: continue
            text=git(repo,'show',f'{parent}:{path}').splitlines()
            if len(text)<2*W: continue
            bl=blame(repo,parent,path)
            if len(bl)!=len(text): continue
            wins=[(s,min(s+W-1,len(text))) for s in range(1,len(text)+1,W)]
            wt=[terms('\n'.join(text[s-1:e])+' '+path) for s,e in wins]
            bm=bm25_scores(wt,goal)
            hist=[sum(sim.get(bl[i-1],0) for i in range(s,e+1)) for s,e in wins]
            churn=[sum(1 for i in range(s,e+1) if bl[i-1] in rank) for s,e in wins]
            rec=[sum(1/(1+rank[bl[i-1]]/30) for i in range(s,e+1) if bl[i-1] in rank) for s,e in wins]
            touch=[any(a<=e and b>=s for a,b in hs) for s,e in wins]
            def norm(v): m=max(v); return [x/m if m>0 else 0 for x in v]
            nb,nh,nc,nr=norm(bm),norm(hist),norm(churn),norm(rec)
            variants={'bm25':nb,'hist':nh,'churn':nc,'recency':nr,
                      'bm25+.3hist':[a+.3*b for a,b in zip(nb,nh)],
                      'bm25+.6hist':[a+.6*b for a,b in zip(nb,nh)],
                      'bm25+.3churn':[a+.3*b for a,b in zip(nb,nc)],
                      'bm25+.3rec':[a+.3*b for a,b in zip(nb,nr)],
                      'bm25+.3hist+.2rec':[a+.3*b+.2*c for a,b,c in zip(nb,nh,nr)],
                      'base_rate':None}
            for name,v in variants.items():
                if v is None:
                    res[name].append(sum(touch)/len(touch)); continue
                order=sorted(range(len(wins)),key=lambda i:(-v[i],i))
                res[name+'@1'].append(touch[order[0]])
                res[name+'@2'].append(any(touch[i] for i in order[:2]))
    print(repo, 'files', len(res['base_rate']))
    for k,v in res.items(): print(f'  {k:24s} {sum(v)/len(v):.3f}')
main()
