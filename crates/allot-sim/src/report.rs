//! `allot simulate --report report.html`: one self-contained HTML page (no network: the style,
//! the script and the charts are inline) for people to look at a simulation's answer.
//!
//! The charts are SVG that this module writes itself (a line chart of utilisation over
//! simulated time, bars of occupancy): a few hundred lines of Rust instead of a vendored
//! charting library, which would need fetching at build time (the build is offline) and would
//! add hundreds of kilobytes of script to every report. The page's small script only sorts and
//! filters tables and, when a node's row is clicked (or the address ends in `#node=NAME`),
//! draws the node as `allot node show -o svg` does (the same renderer,
//! `allot_kubelet::picture`): each distinct layout is drawn once, as a template the page
//! carries, and the script fills in the node's owners from the page's JSON (so 5,000 nodes
//! cost one table row and a few hundred bytes each, not 5,000 pictures).
//!
//! Every number shown that `-o json` also reports carries a `data-key` attribute naming its
//! place in the capacity document, `/` between the steps (`summary/pods`,
//! `fragmentation/classes/gpu.example.com/free`, ...):
//! the browser tests compare the two.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use allot_api::core::v1::{Node, Pod};
use allot_api::resource::v1::{ResourceClaim, ResourceSlice};
use allot_store::Store;
use serde::Serialize;

use crate::capacity::{Consolidation, ReasonGroup, ScaleUp, Verdict, WorkloadFit};
use crate::fragmentation::{Fragmentation, NodeSetup};
use crate::usage::Series;

/// The cluster in numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Nodes.
    pub nodes: usize,
    /// Pods.
    pub pods: usize,
    /// Pods placed (running, finished, or bound).
    pub placed: usize,
    /// Pods pending.
    pub pending: usize,
    /// Pods failed.
    pub failed: usize,
    /// Devices on the nodes (node-local slices).
    pub devices: usize,
    /// Of those, allocated.
    pub allocated_devices: usize,
    /// The simulated time at the end, in seconds.
    pub end_seconds: u64,
}

/// One device of a node, for the drill-down.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct DeviceCell {
    /// `pool/device`.
    d: String,
    /// The pod using it (`namespace/name`), or empty.
    p: String,
}

/// One node's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct NodeRow {
    name: String,
    pods: usize,
    devices: usize,
    allocated: usize,
    cpus: usize,
    free_cpus: Option<usize>,
    numa_free: Vec<(u32, usize)>,
    stranded_units: f64,
    group: String,
    #[serde(skip)]
    cells: Vec<DeviceCell>,
    /// The node's drawing: its layout (an index into the page's layouts) and owners.
    layout: usize,
    paint: allot_kubelet::picture::Paints,
}

/// Who holds each allocated device, by (driver, pool, device): `namespace/name` of the claim's
/// first consumer, or `claim namespace/name` for a claim nobody has reserved.
pub(crate) fn device_users(store: &Store) -> HashMap<(&str, &str, &str), String> {
    let mut users = HashMap::new();
    for claim in store.list::<ResourceClaim>() {
        let Some(allocation) = &claim.status.allocation else {
            continue;
        };
        let user = claim
            .status
            .reserved_for
            .first()
            .map(|r| format!("{}/{}", claim.metadata.namespace, r.name))
            .unwrap_or_else(|| {
                format!("claim {}/{}", claim.metadata.namespace, claim.metadata.name)
            });
        for result in &allocation.devices.results {
            users.insert(
                (
                    result.driver.as_str(),
                    result.pool.as_str(),
                    result.device.as_str(),
                ),
                user.clone(),
            );
        }
    }
    users
}

/// Devices per node, with the pod using each, from node-local slices and claims' allocations.
fn node_devices(store: &Store) -> BTreeMap<String, Vec<DeviceCell>> {
    let users = device_users(store);
    let mut out: BTreeMap<String, Vec<DeviceCell>> = BTreeMap::new();
    for slice in store.list::<ResourceSlice>() {
        let Some(node) = slice.spec.node_name.as_ref() else {
            continue;
        };
        let cells = out.entry(node.to_string()).or_default();
        for device in &slice.spec.devices {
            let key = (
                slice.spec.driver.as_str(),
                slice.spec.pool.name.as_str(),
                device.name.as_str(),
            );
            cells.push(DeviceCell {
                d: format!("{}/{}", key.1, key.2),
                p: users.get(&key).cloned().unwrap_or_default(),
            });
        }
    }
    out
}

/// The summary of a final state.
pub fn summary(store: &Store, end_seconds: u64) -> Summary {
    let mut summary = Summary {
        nodes: store.list::<Node>().count(),
        pods: 0,
        placed: 0,
        pending: 0,
        failed: 0,
        devices: 0,
        allocated_devices: 0,
        end_seconds,
    };
    for pod in store.list::<Pod>() {
        summary.pods += 1;
        if crate::table::placed(pod) {
            summary.placed += 1;
        } else if pod.status.phase.as_deref() == Some("Failed") {
            summary.failed += 1;
        } else {
            summary.pending += 1;
        }
    }
    for cells in node_devices(store).values() {
        summary.devices += cells.len();
        summary.allocated_devices += cells.iter().filter(|c| !c.p.is_empty()).count();
    }
    summary
}

/// What a report shows.
pub struct Report<'a> {
    /// The page's title.
    pub title: String,
    /// The final state.
    pub store: &'a Store,
    /// The cluster in numbers.
    pub summary: &'a Summary,
    /// Utilisation over time.
    pub usage: Option<&'a Series>,
    /// Fragmentation.
    pub fragmentation: Option<&'a Fragmentation>,
    /// Pending pods by reason.
    pub pending: &'a [ReasonGroup],
    /// The scale-up answer.
    pub scale_up: Option<&'a ScaleUp>,
    /// The consolidation answer.
    pub consolidation: Option<&'a Consolidation>,
    /// The workload what-if answer.
    pub workload: Option<&'a WorkloadFit>,
    /// Served live (`allot serve`'s `/ui/`) at this store resourceVersion: the page watches
    /// pods, claims and nodes from there (same origin, so through `kubectl proxy` the proxy
    /// authenticates) and reloads a second after the first change.
    pub live_resource_version: Option<u64>,
    /// Each node's machine and kubelet configuration, for its drawing (without: its devices
    /// only).
    pub setup: Option<NodeSetup<'a>>,
}

/// Escapes text for HTML.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn num(key: &str, value: impl std::fmt::Display) -> String {
    format!(
        "<span class=\"n\" data-key=\"{}\">{value}</span>",
        escape(key)
    )
}

fn fixed(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

const STYLE: &str = r#"
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:12px 24px}header h1{margin:0;font-size:20px}
nav a{color:#9cc3ff;margin-right:14px;text-decoration:none}
main{padding:8px 24px 40px}section{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:12px 16px;margin:14px 0}
h2{font-size:17px;margin:4px 0 10px}.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #dde1e7;border-radius:6px;padding:8px 14px;min-width:110px}.card .n{font-size:22px;font-weight:600;display:block}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #eceff3;vertical-align:top}
th{cursor:pointer;background:#f0f2f5;user-select:none;position:sticky;top:0}th.sorted-asc::after{content:" \25B2"}th.sorted-desc::after{content:" \25BC"}
td.num,th.num{text-align:right}tr.node{cursor:pointer}tr.node:hover{background:#eef4ff}
.bar{display:inline-block;height:10px;background:#e3e7ee;width:120px;vertical-align:middle;border-radius:2px;overflow:hidden}
.bar i{display:block;height:10px;background:#3b82f6}
.muted{color:#6b7280}.scroll{max-height:560px;overflow:auto}.ok{color:#15803d}.bad{color:#b91c1c}
#drill{border:1px solid #3b82f6;border-radius:6px;padding:8px;margin:8px 0;display:none}#drill .picture{overflow:auto;max-height:720px}
input[type=search]{padding:4px 8px;width:260px;margin:6px 0}
details summary{cursor:pointer}
pre{white-space:pre-wrap;font-size:12px;background:#f6f7f9;padding:6px}
"#;

const SCRIPT: &str = r#"
(function(){
  var errors=0;
  window.addEventListener('error',function(){errors++;document.body.setAttribute('data-errors',String(errors));});
  document.body.setAttribute('data-errors','0');
  function cellValue(td){var v=td.getAttribute('data-sort');if(v===null){v=td.textContent.trim();}var n=parseFloat(v);return isNaN(n)||!/^-?[0-9.]+%?$/.test(v)?v.toLowerCase():n;}
  document.querySelectorAll('table.sortable').forEach(function(table){
    var heads=table.querySelectorAll('th');
    heads.forEach(function(th,index){
      th.addEventListener('click',function(){
        var asc=!th.classList.contains('sorted-asc');
        heads.forEach(function(h){h.classList.remove('sorted-asc','sorted-desc');});
        th.classList.add(asc?'sorted-asc':'sorted-desc');
        var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
        rows.sort(function(a,b){var x=cellValue(a.cells[index]),y=cellValue(b.cells[index]);if(x<y){return asc?-1:1;}if(x>y){return asc?1:-1;}return 0;});
        var fragment=document.createDocumentFragment();rows.forEach(function(r){fragment.appendChild(r);});body.appendChild(fragment);
      });
    });
  });
  var dataNode=document.getElementById('report-data');
  var data=dataNode?JSON.parse(dataNode.textContent):{nodes:[]};
  var byName={};data.nodes.forEach(function(n){byName[n.name]=n;});
  function esc(t){return String(t).replace(/&/g,'&amp;').replace(/</g,'&lt;').replace(/>/g,'&gt;').replace(/"/g,'&quot;').replace(/@/g,'&#64;');}
  // The node's drawing: its layout's template with its owners filled in (as Rust's
  // picture::Template::fill does; the Rust tests check that this is node show's SVG).
  function machine(node){
    var t=data.layouts[node.layout],p=node.paint;
    function owner(i){var o=p.slots[i];return (o===undefined||o<0)?[t.free[1],t.free[0]]:p.owners[o];}
    var body=t.body.replace(/@([ft])(\d+)@/g,function(m,k,i){var o=owner(+i);return k==='f'?o[1]:o[0];}).replace('@n@',function(){return esc(node.name);});
    var y=t.legend_top,legend=t.legend_head.replace('@y@',String(y+12));y+=t.row_height;
    p.owners.forEach(function(o){legend+=t.legend_row.replace('@y@',String(y)).replace('@b@',String(y+12)).replace('@f@',function(){return o[1];}).replace('@l@',function(){return o[0];});y+=t.row_height;});
    return body.replace('@h@',String(y+t.bottom_pad))+legend+'</svg>\n';
  }
  function draw(node){
    var drill=document.getElementById('drill');drill.style.display='block';drill.innerHTML='';
    var h=document.createElement('h3');h.textContent=node.name+' \u2014 '+node.allocated+'/'+node.devices+' devices allocated, '+node.pods+' pods'+(node.numa_free.length?', free exclusive CPUs per NUMA node: '+node.numa_free.map(function(nf){return nf[0]+': '+nf[1];}).join(', '):'');drill.appendChild(h);
    if(data.layouts[node.layout]){var box=document.createElement('div');box.className='picture';box.innerHTML=machine(node);drill.appendChild(box);}
  }
  var nodesTable=document.getElementById('nodes');
  var filter=document.getElementById('node-filter');
  if(nodesTable){
    var LIMIT=200;
    var view=data.nodes.slice();
    var fields=['name','pods','devices','allocated','occ','cpus','free_cpus','stranded_units'];
    function value(n,k){if(k==='occ'){return n.devices?Math.floor(n.allocated*100/n.devices):0;}if(k==='free_cpus'){return n.free_cpus===null?-1:n.free_cpus;}return n[k];}
    function render(){
      var q=filter?filter.value.toLowerCase():'';
      var rows=q?view.filter(function(n){return n.name.toLowerCase().indexOf(q)>=0||n.group.toLowerCase().indexOf(q)>=0;}):view;
      var html=[];
      rows.slice(0,LIMIT).forEach(function(n){
        var o=value(n,'occ');
        html.push('<tr class="node" data-node="'+esc(n.name)+'"><td>'+esc(n.name)+'</td><td class="num">'+n.pods+'</td><td class="num">'+n.devices+'</td><td class="num">'+n.allocated+'</td><td><span class="bar"><i style="width:'+o+'%"></i></span></td><td class="num">'+n.cpus+'</td><td class="num">'+(n.free_cpus===null?'-':n.free_cpus)+'</td><td class="num">'+(Math.round(n.stranded_units*100)/100)+'</td></tr>');
      });
      nodesTable.tBodies[0].innerHTML=html.join('');
      document.getElementById('nodes-shown').textContent=rows.length>LIMIT?('the first '+LIMIT+' of '+rows.length+' nodes: sort or filter for the others'):(rows.length+' nodes');
    }
    var heads=nodesTable.querySelectorAll('th');
    heads.forEach(function(th,index){
      th.addEventListener('click',function(){
        var asc=!th.classList.contains('sorted-asc');
        heads.forEach(function(h){h.classList.remove('sorted-asc','sorted-desc');});
        th.classList.add(asc?'sorted-asc':'sorted-desc');
        var k=fields[index];
        view.sort(function(a,b){var x=value(a,k),y=value(b,k);if(x<y){return asc?-1:1;}if(x>y){return asc?1:-1;}return 0;});
        render();
      });
    });
    nodesTable.tBodies[0].addEventListener('click',function(e){var tr=e.target.closest('tr.node');if(tr&&byName[tr.getAttribute('data-node')]){draw(byName[tr.getAttribute('data-node')]);}});
    if(filter){filter.addEventListener('input',render);}
    render();
    var wanted=/^#node=(.+)$/.exec(location.hash);
    if(wanted&&byName[decodeURIComponent(wanted[1])]){draw(byName[decodeURIComponent(wanted[1])]);}
  }
  document.body.setAttribute('data-ready','1');
})();
"#;

/// `/ui/`: watch from the page's resourceVersion; reload once something changed.
const LIVE_SCRIPT: &str = r#"
(function(){
  var done=false;
  function reload(){if(!done){done=true;setTimeout(function(){location.reload();},1000);}}
  ['/api/v1/pods','/apis/resource.k8s.io/v1/resourceclaims','/api/v1/nodes'].forEach(function(url){
    fetch(url+'?watch=1&allowWatchBookmarks=false&resourceVersion='+allotResourceVersion).then(function(response){
      if(!response.ok||!response.body){return;}
      var reader=response.body.getReader();
      reader.read().then(function(chunk){if(!chunk.done){reload();}}).catch(function(){});
    }).catch(function(){});
  });
  document.body.setAttribute('data-live',String(allotResourceVersion));
})();
"#;

/// A line chart of series over time, as SVG.
fn line_chart(
    title: &str,
    times: &[u64],
    lines: &[(String, Vec<u64>, &str)],
    ceiling: Option<u64>,
) -> String {
    const W: f64 = 720.0;
    const H: f64 = 200.0;
    const L: f64 = 50.0;
    const B: f64 = 24.0;
    let max_t = times.last().copied().unwrap_or(0).max(1) as f64;
    let max_v = lines
        .iter()
        .flat_map(|(_, v, _)| v.iter().copied())
        .chain(ceiling)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let x = |t: u64| L + (t as f64 / max_t) * (W - L - 10.0);
    let y = |v: u64| 10.0 + (1.0 - v as f64 / max_v) * (H - B - 10.0);
    let mut svg = format!(
        "<svg class=\"chart\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{}\">",
        escape(title)
    );
    let _ = write!(
        svg,
        "<line x1=\"{L}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#9ca3af\"/><line x1=\"{L}\" y1=\"10\" x2=\"{L}\" y2=\"{}\" stroke=\"#9ca3af\"/>",
        H - B,
        W - 10.0,
        H - B,
        H - B
    );
    let _ = write!(
        svg,
        "<text x=\"4\" y=\"16\" font-size=\"11\">{}</text><text x=\"4\" y=\"{}\" font-size=\"11\">0</text><text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
        max_v as u64,
        H - B,
        W - 10.0,
        H - 6.0,
        escape(&crate::table::duration(max_t as u64))
    );
    if let Some(c) = ceiling {
        let _ = write!(
            svg,
            "<line x1=\"{L}\" y1=\"{0:.1}\" x2=\"{1}\" y2=\"{0:.1}\" stroke=\"#ef4444\" stroke-dasharray=\"4 3\"/>",
            y(c),
            W - 10.0
        );
    }
    for (name, values, colour) in lines {
        let mut points = String::new();
        let mut last = None;
        for (t, v) in times.iter().zip(values) {
            // A step chart: the value holds until the next sample.
            if let Some(prev) = last {
                let _ = write!(points, "{:.1},{:.1} ", x(*t), y(prev));
            }
            let _ = write!(points, "{:.1},{:.1} ", x(*t), y(*v));
            last = Some(*v);
        }
        // The last value holds to the end of the axis.
        if let Some(value) = last {
            let _ = write!(points, "{:.1},{:.1}", W - 10.0, y(value));
        }
        let _ = write!(
            svg,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"><title>{}</title></polyline>",
            points.trim_end(),
            escape(name)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// At most `limit` samples, evenly spread, the last always kept.
fn thin<T: Clone>(items: &[T], limit: usize) -> Vec<T> {
    if items.len() <= limit {
        return items.to_vec();
    }
    let step = items.len().div_ceil(limit);
    let mut out: Vec<T> = items.iter().step_by(step).cloned().collect();
    if let Some(last) = items.last() {
        out.push(last.clone());
    }
    out
}

const COLOURS: &[&str] = &[
    "#3b82f6", "#10b981", "#f59e0b", "#8b5cf6", "#ec4899", "#14b8a6",
];

fn usage_section(out: &mut String, series: &Series, fragmentation: Option<&Fragmentation>) {
    out.push_str("<section id=\"usage\"><h2>Utilisation over simulated time</h2>");
    let samples = thin(&series.samples, 600);
    if samples.is_empty() {
        out.push_str("<p class=\"muted\">Nothing changed over time.</p></section>");
        return;
    }
    let times: Vec<u64> = samples.iter().map(|s| s.seconds).collect();
    let mut classes: Vec<&String> = samples.iter().flat_map(|s| s.devices.keys()).collect();
    classes.sort();
    classes.dedup();
    for (i, class) in classes.iter().enumerate() {
        let values: Vec<u64> = samples
            .iter()
            .map(|s| s.devices.get(*class).copied().unwrap_or(0))
            .collect();
        let total = fragmentation
            .and_then(|f| f.classes.iter().find(|c| &c.class == *class))
            .map(|c| c.devices as u64);
        let _ = write!(
            out,
            "<h3>{} <span class=\"muted\">allocated devices{}</span></h3>",
            escape(class),
            total.map_or(String::new(), |t| format!(" (of {t}, dashed)"))
        );
        out.push_str(&line_chart(
            class,
            &times,
            &[((*class).clone(), values, COLOURS[i % COLOURS.len()])],
            total,
        ));
    }
    out.push_str(
        "<h3>Pods <span class=\"muted\">running (green), bound (blue), pending (red)</span></h3>",
    );
    out.push_str(&line_chart(
        "pods",
        &times,
        &[
            (
                "running".into(),
                samples.iter().map(|s| s.running).collect(),
                "#10b981",
            ),
            (
                "bound".into(),
                samples.iter().map(|s| s.bound).collect(),
                "#3b82f6",
            ),
            (
                "pending".into(),
                samples.iter().map(|s| s.pending).collect(),
                "#ef4444",
            ),
        ],
        None,
    ));
    out.push_str("</section>");
}

fn pending_section(out: &mut String, pending: &[ReasonGroup]) {
    out.push_str("<section id=\"pending\"><h2>Pods not running, by reason</h2>");
    if pending.is_empty() {
        out.push_str("<p class=\"ok\">Every pod is placed.</p></section>");
        return;
    }
    out.push_str("<table class=\"sortable\"><thead><tr><th class=\"num\">Pods</th><th>Reason</th></tr></thead><tbody>");
    for group in pending {
        let shown: Vec<String> = group.pods.iter().take(50).map(|p| escape(p)).collect();
        let more = group.pods.len().saturating_sub(50);
        let _ = write!(
            out,
            "<tr><td class=\"num\">{}</td><td>{}<details><summary>explanation for {}</summary><pre>{}</pre></details><details><summary>pods</summary>{}{}</details></td></tr>",
            group.pods.len(),
            escape(&group.reason),
            escape(group.pods.first().map_or("", String::as_str)),
            escape(&group.example),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        );
    }
    out.push_str("</tbody></table><p class=\"muted\">The reason is the scheduler's PodScheduled message (it says, per node, which filter refused the pod: DRA allocation, resources, affinity, taints) or, for a pod refused on its node, the kubelet's admission failure (CPU or NUMA alignment by the Topology Manager).</p></section>");
}

fn fragmentation_section(out: &mut String, f: &Fragmentation) {
    out.push_str("<section id=\"fragmentation\"><h2>Fragmentation</h2>");
    out.push_str("<p class=\"muted\">Free units are free capacity in whole devices; stranded units are what is left free once the class's largest common shape is packed on every node with the allocator; the score is stranded / free (0 = every free unit can serve the largest shape).</p>");
    if !f.shapes.is_empty() {
        out.push_str("<table class=\"sortable\"><thead><tr><th>Shape</th><th>One copy</th><th class=\"num\">Claims</th></tr></thead><tbody>");
        for shape in &f.shapes {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>",
                escape(&shape.name),
                escape(&shape.description),
                shape.claims
            );
        }
        out.push_str("</tbody></table><br>");
    }
    out.push_str("<table class=\"sortable\" id=\"classes\"><thead><tr><th>Class</th><th class=\"num\">Nodes</th><th class=\"num\">Devices</th><th class=\"num\">Allocated</th><th class=\"num\">Free</th><th class=\"num\">Blocked</th><th class=\"num\">Free units</th><th class=\"num\">Stranded</th><th class=\"num\">Score</th><th>Copies that fit</th></tr></thead><tbody>");
    for c in &f.classes {
        let key = |field: &str| format!("fragmentation/classes/{}/{field}", c.class);
        let fits = c
            .fits
            .iter()
            .map(|s| format!("{}: {}", escape(&s.shape), s.copies))
            .collect::<Vec<_>>()
            .join("<br>");
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            escape(&c.class),
            num(&key("nodes"), c.nodes),
            num(&key("devices"), c.devices),
            num(&key("allocated"), c.allocated),
            num(&key("free"), c.free),
            num(&key("blocked"), c.blocked),
            num(&key("freeUnits"), fixed(c.free_units)),
            num(&key("strandedUnits"), fixed(c.stranded_units)),
            num(&key("score"), fixed(c.score)),
            fits
        );
    }
    out.push_str("</tbody></table>");
    let cpus = &f.cpus;
    if cpus.nodes > 0 {
        let _ = write!(
            out,
            "<p>Exclusive CPUs on {} nodes: {} allocatable, {} free, {} stranded; NUMA fragmentation score {}.</p>",
            num("fragmentation/cpus/nodes", cpus.nodes),
            num("fragmentation/cpus/allocatable", cpus.allocatable),
            num("fragmentation/cpus/free", cpus.free),
            num("fragmentation/cpus/stranded", cpus.stranded),
            num("fragmentation/cpus/score", fixed(cpus.score))
        );
    }
    out.push_str("</section>");
}

/// A reason's first line, the rest behind a disclosure.
fn why(reason: &str) -> String {
    match reason.split_once('\n') {
        None => escape(reason),
        Some((first, rest)) => format!(
            "{}<details><summary>details</summary><pre>{}</pre></details>",
            escape(first),
            escape(rest)
        ),
    }
}

fn placements_list(out: &mut String, items: &[(String, String)]) {
    out.push_str("<details><summary>placements</summary><table class=\"sortable\"><thead><tr><th>Pod</th><th>Node</th></tr></thead><tbody>");
    for (pod, node) in items {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td></tr>",
            escape(pod),
            escape(node)
        );
    }
    out.push_str("</tbody></table></details>");
}

fn answers_section(out: &mut String, report: &Report<'_>) {
    if report.scale_up.is_none() && report.consolidation.is_none() && report.workload.is_none() {
        return;
    }
    out.push_str("<section id=\"answers\"><h2>Answers</h2>");
    if let Some(w) = report.workload {
        let verdict = match w.verdict {
            Verdict::Entirely => "<span class=\"ok\">fits entirely</span>",
            Verdict::Partly => "<span class=\"bad\">fits partly</span>",
            Verdict::Not => "<span class=\"bad\">does not fit</span>",
        };
        let _ = write!(
            out,
            "<h3>What-if workload</h3><p>The workload {verdict}: {} of {} pods placed.</p>",
            num("whatIf/placed", w.placed.len()),
            num("whatIf/pods", w.pods)
        );
        let items: Vec<(String, String)> = w
            .placed
            .iter()
            .map(|p| (p.pod.clone(), p.node.clone()))
            .collect();
        placements_list(out, &items);
        for group in &w.reasons {
            let _ = write!(
                out,
                "<p class=\"bad\">{} pods: {}</p>",
                group.pods.len(),
                escape(&group.reason)
            );
        }
    }
    if let Some(s) = report.scale_up {
        out.push_str("<h3>Scale-up</h3>");
        if s.found {
            let mix = s
                .shapes
                .iter()
                .zip(&s.counts)
                .enumerate()
                .filter(|(_, (_, c))| **c > 0)
                .map(|(i, (shape, c))| {
                    format!(
                        "{} × {}",
                        num(&format!("scaleUp/counts/{i}"), c),
                        escape(shape)
                    )
                })
                .collect::<Vec<_>>()
                .join(" + ");
            let _ = write!(
                out,
                "<p>{} pods did not fit; adding {} (cost {}) makes every pod fit. Found in {} simulations.</p>",
                num("scaleUp/unfitBefore", s.unfit_before.len()),
                if mix.is_empty() {
                    "nothing".to_string()
                } else {
                    mix
                },
                fixed(s.cost),
                s.probes.len()
            );
            let items: Vec<(String, String)> = s
                .placements
                .iter()
                .map(|p| (p.pod.clone(), p.node.clone()))
                .collect();
            placements_list(out, &items);
        } else {
            let _ = write!(
                out,
                "<p class=\"bad\">No count up to the shapes' maxNodes makes every pod fit; {} pods still do not.</p>",
                s.still_unfit.len()
            );
        }
    }
    if let Some(c) = report.consolidation {
        let _ = write!(
            out,
            "<h3>Consolidation</h3><p>{} of {} nodes tried can be removed together{}.</p>",
            num("consolidation/removable", c.removable.len()),
            c.tried.len(),
            if c.removable.is_empty() {
                String::new()
            } else {
                format!(": {}", escape(&c.removable.join(", ")))
            }
        );
        out.push_str("<table class=\"sortable\"><thead><tr><th>Node</th><th class=\"num\">Pods</th><th>Removable</th><th>Why not</th></tr></thead><tbody>");
        for t in &c.tried {
            let _ = write!(
                out,
                "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
                escape(&t.node),
                t.pods,
                if t.removable { "yes" } else { "no" },
                why(t.reason.as_deref().unwrap_or_default())
            );
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("</section>");
}

fn node_rows(report: &Report<'_>, machines: &mut machines::Machines) -> Vec<NodeRow> {
    let mut devices = node_devices(report.store);
    let mut pods: BTreeMap<String, usize> = BTreeMap::new();
    for pod in report.store.list::<Pod>() {
        if crate::table::placed(pod)
            && let Some(node) = &pod.spec.node_name
        {
            *pods.entry(node.clone()).or_default() += 1;
        }
    }
    let fragments: BTreeMap<&str, &crate::fragmentation::NodeFragmentation> = report
        .fragmentation
        .map(|f| f.nodes.iter().map(|n| (n.node.as_str(), n)).collect())
        .unwrap_or_default();
    report
        .store
        .list::<Node>()
        .map(|node| {
            let name = node.metadata.name.clone();
            let cells = devices.remove(&name).unwrap_or_default();
            let cpus = node
                .status
                .allocatable
                .get("cpu")
                .map_or(0, |q| (q.milli_value() / 1000).max(0) as usize);
            let fragment = fragments.get(name.as_str());
            let node_cpus = fragment.and_then(|f| f.cpus.as_ref());
            let allocated = cells.iter().filter(|c| !c.p.is_empty()).count();
            let (layout, paint) = machines.nodes.remove(&name).unwrap_or_default();
            NodeRow {
                layout,
                paint,
                pods: pods.get(&name).copied().unwrap_or(0),
                devices: cells.len(),
                allocated,
                cpus,
                free_cpus: node_cpus.map(|c| c.free),
                numa_free: node_cpus
                    .map(|c| c.free_by_numa.iter().map(|n| (n.numa, n.free)).collect())
                    .unwrap_or_default(),
                stranded_units: fragment
                    .map(|f| f.classes.iter().map(|c| c.stranded_units).sum())
                    .unwrap_or(0.0),
                group: format!("{} devices, {cpus} CPUs", cells.len()),
                name,
                cells,
            }
        })
        .collect()
}

fn bar(part: usize, whole: usize) -> String {
    let width = if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    };
    format!("<span class=\"bar\"><i style=\"width:{width:.0}%\"></i></span>")
}

fn nodes_section(out: &mut String, rows: &[NodeRow]) {
    out.push_str("<section id=\"node-groups\"><h2>Node groups</h2><table class=\"sortable\"><thead><tr><th>Group</th><th class=\"num\">Nodes</th><th class=\"num\">Pods</th><th class=\"num\">Devices</th><th class=\"num\">Allocated</th><th>Occupancy</th></tr></thead><tbody>");
    let mut groups: BTreeMap<&str, (usize, usize, usize, usize)> = BTreeMap::new();
    for row in rows {
        let g = groups.entry(row.group.as_str()).or_default();
        g.0 += 1;
        g.1 += row.pods;
        g.2 += row.devices;
        g.3 += row.allocated;
    }
    for (group, (nodes, pods, devices, allocated)) in &groups {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{nodes}</td><td class=\"num\">{pods}</td><td class=\"num\">{devices}</td><td class=\"num\">{allocated}</td><td data-sort=\"{}\">{}</td></tr>",
            escape(group),
            (allocated * 100).checked_div(*devices).unwrap_or(0),
            bar(*allocated, *devices)
        );
    }
    out.push_str("</tbody></table></section>");
    // The rows are drawn by the script from the page's JSON, the first ROW_LIMIT of the
    // current sort and filter: a table of thousands of rows is what makes a page slow to open.
    let _ = write!(
        out,
        "<section id=\"nodes-section\"><h2>Nodes</h2><p class=\"muted\">Click a column to sort, a row to see the node drawn as <code>allot node show -o svg</code> draws it (who holds each CPU and device); the filter matches names and groups.</p><input type=\"search\" id=\"node-filter\" placeholder=\"filter nodes\"> <span id=\"nodes-shown\" class=\"muted\">{} nodes</span><div id=\"drill\"></div><div class=\"scroll\"><table id=\"nodes\"><thead><tr><th>Node</th><th class=\"num\">Pods</th><th class=\"num\">Devices</th><th class=\"num\">Allocated</th><th>Occupancy</th><th class=\"num\">CPUs</th><th class=\"num\">Free excl. CPUs</th><th class=\"num\">Stranded units</th></tr></thead><tbody></tbody></table></div></section>",
        rows.len()
    );
}

/// The page.
pub fn html(report: &Report<'_>) -> String {
    let mut machines = machines::machines(report.store, report.setup);
    let rows = node_rows(report, &mut machines);
    let s = report.summary;
    let mut out = String::with_capacity(64 * 1024 + rows.len() * 600);
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{}</title><style>{STYLE}</style></head><body>",
        escape(&report.title)
    );
    let _ = write!(
        out,
        "<header><h1>{}</h1><nav><a href=\"#summary\">Summary</a><a href=\"#usage\">Utilisation</a><a href=\"#pending\">Pending</a><a href=\"#answers\">Answers</a><a href=\"#fragmentation\">Fragmentation</a><a href=\"#node-groups\">Nodes</a></nav></header><main>",
        escape(&report.title)
    );
    let _ = write!(
        out,
        "<section id=\"summary\"><h2>Cluster</h2><div class=\"cards\"><div class=\"card\">{}nodes</div><div class=\"card\">{}pods</div><div class=\"card\">{}placed</div><div class=\"card\">{}pending</div><div class=\"card\">{}failed</div><div class=\"card\">{}devices</div><div class=\"card\">{}allocated devices</div></div><p class=\"muted\">Simulated {}.</p></section>",
        num("summary/nodes", s.nodes),
        num("summary/pods", s.pods),
        num("summary/placed", s.placed),
        num("summary/pending", s.pending),
        num("summary/failed", s.failed),
        num("summary/devices", s.devices),
        num("summary/allocatedDevices", s.allocated_devices),
        crate::table::duration(s.end_seconds)
    );
    if let Some(series) = report.usage {
        usage_section(&mut out, series, report.fragmentation);
    }
    pending_section(&mut out, report.pending);
    answers_section(&mut out, report);
    if let Some(f) = report.fragmentation {
        fragmentation_section(&mut out, f);
    }
    nodes_section(&mut out, &rows);
    out.push_str("</main><script type=\"application/json\" id=\"report-data\">");
    // `</` cannot end the script element early once escaped.
    let data = serde_json::json!({ "nodes": rows, "layouts": machines.layouts });
    out.push_str(&data.to_string().replace("</", "<\\/"));
    out.push_str("</script><script>");
    out.push_str(SCRIPT);
    if let Some(version) = report.live_resource_version {
        let _ = write!(out, "var allotResourceVersion={version};");
        out.push_str(LIVE_SCRIPT);
    }
    out.push_str("</script></body></html>\n");
    out
}

mod machines;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_thinning() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let items: Vec<u32> = (0..1000).collect();
        let thinned = thin(&items, 100);
        assert!(thinned.len() <= 101);
        assert_eq!(thinned.last(), Some(&999));
        assert_eq!(thin(&items[..5], 100).len(), 5);
    }

    #[test]
    fn each_node_is_drawn_from_one_template_per_layout_with_its_owners() {
        // Two nodes of one machine (static CPU policy, pinned pods): one layout, two paints.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/capacity/cpu-pinned-fleet/cluster.yaml");
        let input = crate::load_paths(&[path]).expect("valid");
        let outcome = crate::run(&input, &mut |_| {}).expect("runs");
        let setup = |node: &Node| Some(input.node_setup(node));
        let machines = machines::machines(&outcome.store, Some(&setup));
        assert_eq!(machines.layouts.len(), 1);
        assert_eq!(machines.nodes.len(), 2);
        let (layout, paint) = &machines.nodes["cpu-1"];
        let labels: Vec<&str> = paint.owners.iter().map(|(l, _)| l.as_str()).collect();
        assert!(
            labels.contains(&"reserved") && labels.contains(&"shared"),
            "{labels:?}"
        );
        assert!(labels.iter().any(|l| l.ends_with("/c")), "{labels:?}");
        let drawn = machines.layouts[*layout].fill("cpu-1", paint);
        assert!(drawn.starts_with("<svg class=\"machine\""));
        assert_eq!(drawn.matches("class=\"cpu\"").count(), 16);
        let summary = summary(&outcome.store, outcome.end.seconds());
        let page = html(&Report {
            title: "t".into(),
            store: &outcome.store,
            summary: &summary,
            usage: None,
            fragmentation: None,
            pending: &[],
            scale_up: None,
            consolidation: None,
            workload: None,
            live_resource_version: None,
            setup: Some(&setup),
        });
        assert!(page.contains("\"layouts\":[{\"body\":\"<svg class=\\\"machine\\\""));
        assert!(page.contains("\"paint\":{\"owners\":"));
    }

    #[test]
    fn a_report_carries_the_numbers_and_the_nodes() {
        let text = "apiVersion: v1\nkind: Node\nmetadata: {name: a}\nstatus:\n  capacity: {cpu: '4', memory: 8Gi, pods: '110'}\n  allocatable: {cpu: '4', memory: 8Gi, pods: '110'}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: '1'}}}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec: {containers: [{name: c, resources: {requests: {cpu: '9'}}}]}\n";
        let input = crate::load_texts(&[("c.yaml", text)]).expect("valid");
        let outcome = crate::run(&input, &mut |_| {}).expect("runs");
        let summary = summary(&outcome.store, outcome.end.seconds());
        assert_eq!((summary.pods, summary.placed, summary.pending), (2, 1, 1));
        let pending = crate::capacity::pending_groups(&outcome.store);
        let page = html(&Report {
            title: "t</title>".into(),
            store: &outcome.store,
            summary: &summary,
            usage: None,
            fragmentation: None,
            pending: &pending,
            scale_up: None,
            consolidation: None,
            workload: None,
            live_resource_version: None,
            setup: None,
        });
        assert!(page.contains("<title>t&lt;/title&gt;</title>"));
        assert!(page.contains("data-key=\"summary/pending\">1<"));
        assert!(page.contains("\"name\":\"a\""));
        assert!(page.contains("default/q"));
        // Self-contained: nothing is fetched.
        assert!(
            !page.contains("<script src") && !page.contains("<link") && !page.contains("@import")
        );
    }
}
