/**
 * The console page of the admin group (`GET <prefix>/console`): one HTML document with its style
 * and script inline, shipped inside the package (no build step for the application, nothing
 * loaded from elsewhere). Every URL it calls is relative to where it was served, so it works
 * with the app mounted under any path (docs/operations.md "Console").
 */
import { CONSOLE_SCRIPT } from './console-script.js';

const STYLE = `
:root { font-family: system-ui, sans-serif; font-size: 14px; color: #1d2430; background: #f6f7f9; }
body { margin: 0; }
header { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; padding: 10px 16px; background: #1d2430; color: #fff; }
header h1 { font-size: 16px; margin: 0 16px 0 0; }
header label { display: flex; gap: 4px; align-items: center; }
main { padding: 12px 16px; }
select, input, button, textarea { font: inherit; }
button { cursor: pointer; border: 1px solid #8a94a6; background: #fff; border-radius: 4px; padding: 3px 10px; }
button:disabled { opacity: 0.45; cursor: default; }
button.danger { border-color: #c62828; color: #c62828; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #e1e4ea; vertical-align: top; }
th { background: #eef0f4; font-weight: 600; }
code, pre { font-family: ui-monospace, monospace; font-size: 12px; }
pre { background: #fff; border: 1px solid #e1e4ea; padding: 8px; overflow: auto; max-height: 280px; margin: 0; }
a { color: #1558b0; }
#notice { margin: 0 0 10px; padding: 6px 10px; border-radius: 4px; background: #fdecea; color: #8e1b13; }
#notice:empty { display: none; }
.grid { display: grid; grid-template-columns: minmax(320px, 3fr) minmax(280px, 2fr); gap: 14px; }
section.panel { background: #fff; border: 1px solid #e1e4ea; border-radius: 6px; padding: 10px; margin-bottom: 14px; }
section.panel h3 { margin: 0 0 8px; font-size: 14px; }
#diagram svg { max-width: 100%; height: auto; }
#diagram g.node.mr-current rect, #diagram g.node.mr-current path, #diagram g.node.mr-current polygon {
  fill: #ffd54f !important; stroke: #e65100 !important; stroke-width: 3px !important; }
/* An active compound or parallel state: its frame outlined, its inside left light, so the active
   leaves inside it stand out. */
#diagram g.cluster.mr-current > rect, #diagram g.statediagram-cluster.mr-current > rect {
  fill: #fffdf3 !important; stroke: #e65100 !important; stroke-width: 2px !important; }
#state-list li.mr-current { font-weight: 700; background: #ffe082; }
.status-done { color: #6b7280; }
.paused { color: #b45309; font-weight: 600; }
#live { font-size: 12px; padding: 2px 8px; border-radius: 10px; background: #e5e7eb; }
#live[data-live="open"] { background: #c8f7c5; }
#timeline { list-style: none; padding: 0; margin: 0; max-height: 420px; overflow: auto; }
#timeline li { padding: 4px 0; border-bottom: 1px solid #eef0f4; }
#timeline li .type { font-weight: 600; }
#timeline li.source-internal { color: #6b7280; }
#timeline li.operator .type { color: #b45309; }
.actions { display: flex; flex-wrap: wrap; gap: 6px; margin-bottom: 8px; }
.muted { color: #6b7280; }
`;

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!,
  );
}

/** The console's HTML. */
export function consolePage(title = 'machine-routes console'): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>${escapeHtml(title)}</h1>
<label>Machine <select id="machine"></select></label>
<label>State <select id="state-filter"><option value="">any</option></select></label>
<label>Status <select id="status-filter"><option value="">any</option><option value="active">active</option><option value="done">done</option></select></label>
<form id="search-form"><input id="search" type="search" placeholder="instance id or business key" size="30"> <button type="submit">Find</button></form>
<label>Operator <input id="who" size="10" value="console"></label>
</header>
<main>
<p id="notice" role="alert"></p>
<section id="list-view">
<table id="instances"><thead><tr><th>Instance</th><th>State</th><th>Status</th><th>Key</th><th>Updated</th></tr></thead><tbody></tbody></table>
<p><button id="more" hidden>More</button> <span id="count" class="muted"></span></p>
</section>
<section id="instance-view" hidden>
<p><a id="back" href="#">&larr; instances</a> <span id="live" data-live="closed">not live</span></p>
<h2 id="instance-title"></h2>
<p id="instance-summary"></p>
<div class="actions" id="actions">
<button data-action="cancel" class="danger">Cancel</button>
<button data-action="pause">Pause</button>
<button data-action="resume">Resume</button>
<button data-action="release">Release lock</button>
<button data-action="retry">Retry failed jobs</button>
<button data-action="fire">Fire timer now</button>
</div>
<form id="send-form" class="actions"><select id="send-type"></select><input id="send-payload" placeholder='payload JSON, e.g. {"reason":"support"}' size="34"><button type="submit">Send event</button></form>
<div class="grid">
<div>
<section class="panel"><h3>Statechart</h3><figure id="diagram"></figure></section>
<section class="panel"><h3>Timeline <label class="muted"><input type="checkbox" id="show-internal"> steps</label></h3><ol id="timeline"></ol><p><button id="more-history" hidden>Older</button></p></section>
</div>
<div>
<section class="panel"><h3>Lock</h3><div id="lock"></div></section>
<section class="panel"><h3>Timers</h3><div id="timers"></div></section>
<section class="panel"><h3>Children</h3><div id="children"></div></section>
<section class="panel"><h3>Failed jobs</h3><div id="jobs"></div></section>
<section class="panel"><h3>Context</h3><pre id="context"></pre></section>
</div>
</div>
</section>
</main>
<script>${CONSOLE_SCRIPT}</script>
</body>
</html>
`;
}
