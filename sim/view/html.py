"""A run as one self-contained HTML file: a space-time diagram and a diff panel.

Theory of operation. The page needs nothing from the network: its CSS and
script are written here, small, and the run travels inside it as JSON in a
`<script type="application/json">` element, escaped so that no value from a
trace (a string holding `</script>`, say) can end that element or open
another (`embed_json`). The script draws the diagram as SVG, one lane per
node and one row per step, and fills the side panel with a step's changes
when the step is clicked. A step's changes, never its whole state, are
embedded, so a long run stays small. Text from the run is set as text
(`textContent`), never parsed as HTML.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from tlasim.sim.view.model import RunView
from tlasim.tracing.outputs import write_output

_SCRIPT_ESCAPES = str.maketrans({
    "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029",
})


def embed_json(data: Any) -> str:
    """JSON that is safe inside a `<script>` element: no `<`, `>` or `&` survives
    as itself, so the text can never close the element, and JSON.parse reads
    the escapes back as the same characters."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).translate(_SCRIPT_ESCAPES)


def view_data(view: RunView) -> dict[str, Any]:
    """The run as the page's script reads it (short keys: a 10,000-step run
    embeds tens of thousands of these)."""
    marks = {}
    for key, mark in (("oracle", view.oracle), ("tlc", view.tlc)):
        if mark is not None:
            marks[key] = {"step": mark.step, "title": mark.title, "text": mark.text}
    return {
        "path": view.path,
        "protocol": view.protocol,
        "spec": view.spec,
        "seed": view.seed,
        "reproduce": view.reproduce,
        "lanes": view.lanes,
        "steps": [
            {
                "q": s.seq, "t": s.ts, "n": s.node, "a": s.action, "p": s.params,
                "c": [[c.path, c.old, c.new, 1 if c.is_set else 0] for c in s.changes],
                **({"f": list(s.faults)} if s.faults else {}),
                **({"m": s.timer} if s.timer is not None else {}),
            }
            for s in view.steps
        ],
        "messages": [
            {"x": m.text, "s": m.src, "d": m.dst, "o": m.sent, "r": m.delivered, "l": m.lost,
             **({"u": 1} if m.duplicate else {})}
            for m in view.messages
        ],
        "down": [[d.node, d.crashed, d.recovered] for d in view.downtimes],
        "plan": None if view.plan is None else [
            {"name": e.name, "text": e.text, "fired": list(e.fired)} for e in view.plan
        ],
        "partitions": view.partitions,
        "faultsRecorded": view.faults_recorded,
        "marks": marks,
        "oracleVerdict": view.oracle_verdict,
        "tlcVerdict": view.tlc_verdict,
        "notes": view.notes,
    }


def render_page(title: str, body: str, data: Any | None) -> str:
    """The whole page: `body` is trusted HTML made here; `data` (the run) is embedded."""
    script = "" if data is None else (
        f'<script type="application/json" id="run-data">{embed_json(data)}</script>\n'
        f"<script>{_SCRIPT}</script>"
    )
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n"
        f"<body>{body}\n{script}</body></html>\n"
    )


def run_page(view: RunView) -> str:
    title = f"tlasim {view.kind}: {view.protocol or 'trace'} seed {view.seed}" \
        if view.seed is not None else f"tlasim {view.kind}: {view.path}"
    body = (
        f"<header><h1>{html.escape(title)}</h1><div id=\"verdicts\"></div></header>"
        "<main><div id=\"diagram-box\"><svg id=\"diagram\" xmlns=\"http://www.w3.org/2000/svg\">"
        "</svg></div><aside id=\"panel\"><h2>Step</h2><div id=\"step-title\">"
        "Click a step in the diagram.</div><div id=\"step-marks\"></div>"
        "<div id=\"step-faults\"></div><table id=\"diff\"></table></aside></main>"
        "<section id=\"plan-box\"><h2>Fault plan</h2><table id=\"plan\"></table></section>"
    )
    return render_page(title, body, view_data(view))


def write_page(path: Path, page: str, what: str = "the report page") -> None:
    """Write the page by tracing/outputs.py's rule: whole, or not at all."""
    write_output(path, what, page.encode("utf-8"))


_CSS = """
body{font:13px/1.4 system-ui,sans-serif;margin:0;color:#222}
header{padding:8px 16px;border-bottom:1px solid #ccc}
h1{font-size:18px;margin:4px 0}h2{font-size:15px;margin:6px 0}
#verdicts div{margin:2px 0}.bad{color:#b00020;font-weight:600}.good{color:#11743a}
main{display:flex;height:70vh}
#diagram-box{flex:1;overflow:auto;border-right:1px solid #ccc}
#panel{width:42%;overflow:auto;padding:0 12px}
#diff{border-collapse:collapse;width:100%;font-family:monospace;font-size:12px}
#diff td{border-top:1px solid #eee;padding:2px 4px;vertical-align:top;word-break:break-all}
td.old{color:#b00020}td.new{color:#11743a}
#step-marks pre{white-space:pre-wrap;background:#fff0f0;border-left:3px solid #b00020;padding:4px}
#step-faults div{color:#8a5a00}
section{padding:8px 16px}table#plan td{padding:1px 8px}
tr.fired td:first-child{color:#8a5a00;font-weight:600}tr.unfired{color:#888}
a{color:#0645ad;cursor:pointer}
.lane-line{stroke:#bbb;stroke-width:1}.lane-label{font-weight:600;text-anchor:middle}
.row-hit{fill:transparent;cursor:pointer}.row-hit:hover{fill:#eef4ff}
.step.selected .row-hit{fill:#dde8ff}
.step.mark-oracle .row-hit{fill:#ffe0e0}.step.mark-tlc .row-hit{fill:#fff0c0}
.dot{fill:#333}.mark-oracle .dot,.mark-tlc .dot{fill:#b00020}
.act{font-size:10px;fill:#444}.ts{font-size:10px;fill:#999;text-anchor:end}
.msg{stroke:#2a62c9;stroke-width:1.2;fill:none}
.msg.dup{stroke:#8e44ad;stroke-dasharray:4 2}.msg.lost{stroke:#b00020;stroke-dasharray:2 2}
.msg.inflight{stroke:#999;stroke-dasharray:1 3}
.loss-x{fill:#b00020;font-weight:700;text-anchor:middle}
.down{fill:#b00020;fill-opacity:.18}.partition{fill:#f0a000;fill-opacity:.15}
.timer-mark circle,.timer-mark path{fill:none;stroke:#1f6f8b;stroke-width:1.2}
#legend{font-size:11px;color:#555;margin-top:2px}
"""

# The diagram: y is the step (so every step has a row to click), x the lane.
_SCRIPT = r"""
(function(){
const run=JSON.parse(document.getElementById('run-data').textContent);
const NS='http://www.w3.org/2000/svg',ROW=18,LANE=150,TOP=40,LEFT=70;
const svg=document.getElementById('diagram');
const laneX={};run.lanes.forEach((n,i)=>laneX[n]=LEFT+60+i*LANE);
const width=LEFT+60+Math.max(run.lanes.length,1)*LANE+80;
const height=TOP+run.steps.length*ROW+20;
svg.setAttribute('width',width);svg.setAttribute('height',height);
function el(tag,attrs,parent,text){const e=document.createElementNS(NS,tag);
 for(const k in attrs)e.setAttribute(k,attrs[k]);if(text!==undefined)e.textContent=text;
 (parent||svg).appendChild(e);return e;}
const y=i=>TOP+i*ROW+ROW/2;
const stepAt=(ts,after)=>{for(let i=0;i<run.steps.length;i++){const t=run.steps[i].t;
 if(t!==null&&(after?t>=ts:t>ts))return i;}return run.steps.length;};
// Partitions shaded over the rows of their ticks, on the lanes they cut.
for(const p of run.partitions||[]){const a=stepAt(p.start,true),b=stepAt(p.end,true);
 if(b<=a)continue;for(const n of p.src.concat(p.dst)){if(!(n in laneX))continue;
  const r=el('rect',{class:'partition',x:laneX[n]-LANE/2+8,y:TOP+a*ROW,width:LANE-16,
   height:(b-a)*ROW,'data-partition':p.name});el('title',{},r,p.name+': '+p.src.join(',')+
   (p.both_ways?' <-> ':' -> ')+p.dst.join(',')+' ['+p.start+', '+p.end+')');}}
for(const [n,from,to] of run.down){if(!(n in laneX))continue;
 const end=to===null?run.steps.length:to;
 const r=el('rect',{class:'down',x:laneX[n]-6,y:y(from),width:12,height:Math.max(y(end)-y(from),2),
  'data-node':n});el('title',{},r,n+' down from step '+from+(to===null?'':' to '+to));}
run.lanes.forEach(n=>{const g=el('g',{class:'lane','data-node':n});
 el('line',{class:'lane-line',x1:laneX[n],x2:laneX[n],y1:TOP-8,y2:height},g);
 el('text',{class:'lane-label',x:laneX[n],y:TOP-14},g,n);});
const stepEls=[];let lastTs=null;
run.steps.forEach((s,i)=>{const cls=['step'];
 if(run.marks.oracle&&run.marks.oracle.step===i)cls.push('mark-oracle');
 if(run.marks.tlc&&run.marks.tlc.step===i)cls.push('mark-tlc');
 if(s.m!==undefined)cls.push('timer');
 const g=el('g',{class:cls.join(' '),id:'step-'+i,'data-step':i});
 el('rect',{class:'row-hit',x:0,y:TOP+i*ROW,width:width,height:ROW},g);
 if(s.t!==lastTs){el('text',{class:'ts',x:LEFT-8,y:y(i)+4},g,'t'+s.t);lastTs=s.t;}
 const x=s.n in laneX?laneX[s.n]:LEFT+20;
 el('circle',{class:'dot',cx:x,cy:y(i),r:3.5},g);
 if(s.m!==undefined){const c=el('g',{class:'timer-mark'},g);
  el('circle',{cx:x-11,cy:y(i),r:4.5},c);
  el('path',{d:'M'+(x-11)+','+(y(i)-3)+'v3h2.5'},c);el('title',{},c,'timer '+s.m+' fired');}
 el('text',{class:'act',x:x+7,y:y(i)-3},g,s.a+(s.f?'  \u26a1':''));
 g.addEventListener('click',()=>select(i));stepEls.push(g);});
for(const m of run.messages){if(!(m.s in laneX))continue;const x1=laneX[m.s],y1=y(m.o);
 if(m.r!==null&&m.d in laneX){const l=el('line',{class:'msg delivered'+(m.u?' dup':''),x1:x1,y1:y1,
   x2:laneX[m.d],y2:y(m.r),'marker-end':'url(#arrow)'});el('title',{},l,m.x);}
 else if(m.l!==null){const x2=x1+(LANE/3),l=el('line',{class:'msg lost'+(m.u?' dup':''),x1:x1,y1:y1,
   x2:x2,y2:y(m.l)});el('title',{},l,'lost: '+m.x);
   el('text',{class:'loss-x',x:x2,y:y(m.l)+4},undefined,'\u00d7');}
 else{el('line',{class:'msg inflight',x1:x1,y1:y1,x2:x1+20,y2:y1+ROW});}}
const defs=el('defs',{});const mk=el('marker',{id:'arrow',viewBox:'0 0 10 10',refX:9,refY:5,
 markerWidth:6,markerHeight:6,orient:'auto-start-reverse'},defs);
el('path',{d:'M0,0L10,5L0,10z',fill:'#2a62c9'},mk);
function text(tag,parent,t,cls){const e=document.createElement(tag);e.textContent=t;
 if(cls)e.className=cls;parent.appendChild(e);return e;}
const planNames={};(run.plan||[]).forEach(p=>planNames[p.name]=p.text);
let selected=null;
function select(i){if(selected!==null)stepEls[selected].classList.remove('selected');
 selected=i;stepEls[i].classList.add('selected');const s=run.steps[i];
 document.getElementById('step-title').textContent='#'+(s.q===null?i:s.q)+' t='+s.t+' '+
  (s.n||'-')+' '+s.a+(s.p?' '+s.p:'')+(s.m!==undefined?' (timer '+s.m+' fired)':'');
 const marks=document.getElementById('step-marks');marks.textContent='';
 for(const k of ['oracle','tlc']){const m=run.marks[k];if(m&&m.step===i){
  text('div',marks,m.title,'bad');text('pre',marks,m.text);}}
 const faults=document.getElementById('step-faults');faults.textContent='';
 for(const f of s.f||[])text('div',faults,'fault '+f+': '+(planNames[f]||'?'));
 const table=document.getElementById('diff');table.textContent='';
 for(const [path,old,nw,isSet] of s.c){const tr=document.createElement('tr');tr.className='change';
  tr.dataset.path=path;text('td',tr,path);
  text('td',tr,old===null?'':(isSet?'-':'')+old,'old');
  text('td',tr,nw===null?'':(isSet?'+':'')+nw,'new');table.appendChild(tr);}
 stepEls[i].scrollIntoView({block:'nearest'});}
function seqOf(i){const q=run.steps[i].q;return q===null?i:q;}
function link(parent,label,i){const a=text('a',parent,label);a.dataset.step=i;
 a.addEventListener('click',()=>select(i));return a;}
const v=document.getElementById('verdicts');
if(run.oracleVerdict!==null){const d=text('div',v,'oracles: '+run.oracleVerdict+' ',
  run.marks.oracle?'bad':'good');if(run.marks.oracle)link(d,'(#'+seqOf(run.marks.oracle.step)+')',
  run.marks.oracle.step).id='link-oracle';}
if(run.tlcVerdict!==null){
 const d=text('div',v,'TLC: '+run.tlcVerdict+' ',run.marks.tlc?'bad':'good');
 if(run.marks.tlc)link(d,'(#'+seqOf(run.marks.tlc.step)+')',run.marks.tlc.step).id='link-tlc';}
for(const n of run.notes)text('div',v,'note: '+n);
if(run.reproduce)text('div',v,'reproduce: '+run.reproduce);
text('div',v,'Rows are steps (#seq, tick at the left), lanes are nodes. Blue arrows: delivered '+
 'messages; purple dashed: duplicates; red dotted with \u00d7: lost; red bars: a node down; '+
 'orange bands: partitions; \u26a1 a fault struck; a small clock: a timer fired.').id='legend';
const plan=document.getElementById('plan');
if(run.plan===null)text('caption',plan,'The trace header holds no fault plan.');
else{if(!run.faultsRecorded)text('caption',plan,'This trace records no fired faults.');
 for(const p of run.plan){const tr=document.createElement('tr');
  const fired=p.fired.length>0;tr.className=p.name==='heal'?'':(fired?'fired':'unfired');
  tr.dataset.fault=p.name;text('td',tr,p.name==='heal'?'':(fired?'fired':'never fired'));
  text('td',tr,p.text);const td=text('td',tr,'');
  p.fired.slice(0,12).forEach(i=>{link(td,'#'+seqOf(i),i);
   td.appendChild(document.createTextNode(' '));});
  if(p.fired.length>12)td.appendChild(document.createTextNode('... '+p.fired.length+' in all'));
  plan.appendChild(tr);}}
const first=run.marks.tlc?run.marks.tlc.step:run.marks.oracle?run.marks.oracle.step:null;
if(first!==null)select(first);
document.body.dataset.rendered='1';
})();
"""
