#!/usr/bin/env python3
# Differential check of the counter contract (docs/counter-contract.md): sends the same
# deliveries to the seed's Python receiver and to the counter example, and prints every
# case where status, body or Retry-After differ.
#
#   cargo build --release --example counter
#   SEED_COUNTER=/path/to/seed_counter.py python3 tests/conformance/diff_vs_seed.py
#   python3 tests/conformance/diff_vs_seed.py /path/to/seed_counter.py
#
# The seed's receiver is not part of this repository; BENCHMARKS.md says where it comes from.
import hmac,hashlib,time,sys,http.client,json,subprocess,os,tempfile,socket
ROOT=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REF=sys.argv[1] if len(sys.argv)>1 else os.environ.get('SEED_COUNTER','')
if not REF:
    sys.exit("diff_vs_seed.py: give the seed's Python receiver (seed_counter.py) as the argument or in SEED_COUNTER; see BENCHMARKS.md")
if not os.path.isfile(REF):
    sys.exit(f"diff_vs_seed.py: {REF} is not a file")
OURS=os.path.join(ROOT,'target','release','examples','counter')
SECRET='ab'*32
def start(cmd, db):
    env=dict(os.environ, COUNTER_SECRET=SECRET, COUNTER_FAULTS='fail-before-commit=evt-f,drop-after-commit=evt-d')
    p=subprocess.Popen(cmd+['serve','--listen','127.0.0.1:0','--db',db],env=env,stdout=subprocess.PIPE,stderr=subprocess.DEVNULL)
    line=p.stdout.readline().decode()
    return p,int(line.strip().rsplit(':',1)[1])
def send(port, body, did='d-1', ts=None, sig=None, hdrs=None, method='POST', path='/webhook', raw=None):
    ts=ts or str(int(time.time()))
    sig=sig or hmac.new(bytes.fromhex(SECRET),b'demo-webhook-v1\n'+did.encode()+b'\n'+ts.encode()+b'\n'+body,hashlib.sha256).hexdigest()
    h={'Demo-Delivery-Id':did,'Demo-Timestamp':ts,'Demo-Signature':sig} if hdrs is None else hdrs
    try:
        c=http.client.HTTPConnection('127.0.0.1',port,timeout=10)
        c.request(method,path,body,h)
        r=c.getresponse(); return (r.status, r.read().decode(), r.getheader('Retry-After') is not None, r.getheader('Content-Type'))
    except Exception as e:
        return ('DROP', type(e).__name__)
E=lambda i,v,k='increment': json.dumps({"event_id":i,"kind":k,"value":v},separators=(',',':')).encode()
now=int(time.time())
cases=[('first',dict(body=E('evt-a',3))),('dup',dict(body=E('evt-a',3),did='d-2')),('conflict',dict(body=E('evt-a',4))),
 ('b',dict(body=E('evt-b',4))),('a again',dict(body=E('evt-a',3))),
 ('fail',dict(body=E('evt-f',2))),('fail retry',dict(body=E('evt-f',2))),
 ('drop',dict(body=E('evt-d',2))),('drop retry',dict(body=E('evt-d',2))),
 ('badsig',dict(body=E('evt-x',1),sig='0'*64)),('stale',dict(body=E('evt-x',1),ts=str(now-301))),('future',dict(body=E('evt-x',1),ts=str(now+301))),
 ('edge',dict(body=E('evt-edge',1),ts=str(now-299))),
 ('nohdr',dict(body=E('evt-x',1),hdrs={})),('upper id',dict(body=E('evt-x',1),did='D-1')),
 ('broken',dict(body=b'{"event_id":')),('dupkey',dict(body=b'{"event_id":"evt-x","kind":"increment","value":1,"value":2}')),
 ('utf8',dict(body=b'{"event_id":"evt-x\xff","kind":"increment","value":1}')),('nan',dict(body=b'{"event_id":"evt-x","kind":"increment","value":NaN}')),
 ('inf',dict(body=b'{"event_id":"evt-x","kind":"increment","value":-Infinity}')),('bool',dict(body=b'{"event_id":"evt-x","kind":"increment","value":true}')),
 ('str',dict(body=b'{"event_id":"evt-x","kind":"increment","value":"5"}')),('float',dict(body=b'{"event_id":"evt-x","kind":"increment","value":3.0}')),
 ('kind',dict(body=E('evt-x',1,'decrement'))),('extra',dict(body=b'{"event_id":"evt-x","kind":"increment","value":1,"t":1}')),
 ('missing',dict(body=b'{"event_id":"evt-x","kind":"increment"}')),('zero',dict(body=E('evt-x',0))),('big',dict(body=E('evt-x',101))),
 ('8193',dict(body=E('evt-x',1)+b' '*(8193-len(E('evt-x',1))))),('8192',dict(body=E('evt-y',1)+b' '*(8192-len(E('evt-y',1))))),
 ('array',dict(body=b'[]')),('empty',dict(body=b'')),('bom',dict(body=b'\xef\xbb\xbf'+E('evt-x',1))),('trailing',dict(body=E('evt-x',1)+b'x')),
 ('deep',dict(body=b'{"event_id":"evt-x","kind":"increment","value":1,"z":'+b'['*100+b']'*100+b'}')),
 ('1e2',dict(body=b'{"event_id":"evt-x","kind":"increment","value":1e2}')),('neg0',dict(body=b'{"event_id":"evt-x","kind":"increment","value":-0}')),
 ('big int',dict(body=b'{"event_id":"evt-x","kind":"increment","value":100000000000000000000000}')),
 ('escaped key dup',dict(body=b'{"event_id":"evt-x","kind":"increment","value":1,"\\u0076alue":2}')),
 ('lone surrogate',dict(body=b'{"event_id":"evt-x","kind":"incr\\ud800","value":1}')),
 ('404',dict(body=E('evt-x',1),path='/other')),('405',dict(body=b'',method='GET')),
]
d=tempfile.mkdtemp()
ref,rp=start(['python3',REF],d+'/ref.db')
ours,op=start([OURS],d+'/ours.db')
bad=0
for name,kw in cases:
    a=send(rp,**kw); b=send(op,**kw)
    same = a[:3]==b[:3] if a[0]!='DROP' else b[0]=='DROP'
    if not same:
        # compare JSON bodies structurally
        try: same = a[0]==b[0] and json.loads(a[1])==json.loads(b[1]) and a[2]==b[2]
        except Exception: pass
        if same: print('ORDER-ONLY', name, a, b)
    if not same: bad+=1; print('DIFF',name,'ref=',a,'ours=',b)
ref.terminate(); ours.terminate(); ref.wait(); ours.wait()
s1=subprocess.run(['python3',REF,'state','--db',d+'/ref.db'],capture_output=True).stdout
s2=subprocess.run([OURS,'state','--db',d+'/ours.db'],capture_output=True).stdout
print('state ref ',s1); print('state ours',s2); print('diffs',bad,'of',len(cases))
