/** The inspector page's HTML and CSS (its script is the bundle, inspector/page/main.ts). */

/** The HTML of the page at `path` (its script at `<path>/inspector.js`). */
export function inspectorHtml(path: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Concord inspector</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${path}/inspector.css">
<script type="module" src="${path}/inspector.js"></script>
</head>
<body>
<header>
  <h1>Concord inspector</h1>
  <span id="serving" class="muted"></span>
  <span id="connection" class="pill">starting</span>
</header>
<form id="login" hidden>
  <p>This peer asks for credentials. They stay in this page (and its address's #fragment), never in a request's URL.</p>
  <label>Agent id <input name="peer" autocomplete="username" required></label>
  <label>Token <input name="token" type="password" autocomplete="current-password"></label>
  <button type="submit">Inspect</button>
  <p id="login-error" class="error"></p>
</form>
<main id="app" hidden>
  <section id="overview">
    <div id="durability" class="card"></div>
    <div class="card wide"><h2>Peers</h2><table id="peers"><thead><tr><th>peer</th><th>state</th><th>lag (commits)</th><th>lag (bytes)</th><th>last ack</th><th>refused writes</th><th>refused by remote</th><th>malformed</th><th>in / out</th></tr></thead><tbody></tbody></table><div id="traffic"></div><div id="presence"></div></div>
  </section>
  <section id="workspace">
    <nav class="card"><h2>Names</h2><ul id="names"></ul></nav>
    <article id="detail" class="card"><p class="muted">Pick a name.</p></article>
  </section>
</main>
</body>
</html>
`
}

/** The page's stylesheet. */
export const INSPECTOR_CSS = `
:root { font: 14px/1.45 system-ui, sans-serif; color: #222; background: #f6f7f9; }
body { margin: 0; }
[hidden] { display: none !important; }
header { display: flex; gap: 16px; align-items: baseline; padding: 10px 20px; background: #1f2933; color: #fff; }
header h1 { font-size: 18px; margin: 0; }
header .muted { color: #cbd2d9; }
h2 { font-size: 15px; margin: 0 0 8px; }
h3 { font-size: 14px; margin: 14px 0 6px; }
.muted { color: #7b8794; }
.error { color: #c62828; }
.pill { padding: 1px 8px; border-radius: 10px; background: #52606d; font-size: 12px; }
.pill.ok { background: #2e7d32; } .pill.bad { background: #c62828; }
main { padding: 14px 20px; display: flex; flex-direction: column; gap: 14px; }
form#login { margin: 40px auto; max-width: 420px; display: flex; flex-direction: column; gap: 8px; background: #fff; padding: 20px; border-radius: 6px; }
.card { background: #fff; border-radius: 6px; padding: 12px 14px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
#overview { display: flex; gap: 14px; align-items: flex-start; }
#overview .wide { flex: 1; overflow-x: auto; }
#durability { min-width: 220px; }
#workspace { display: grid; grid-template-columns: 300px 1fr; gap: 14px; align-items: start; }
#names { list-style: none; margin: 0; padding: 0; }
#names li { padding: 6px 8px; border-radius: 4px; cursor: pointer; border-bottom: 1px solid #f0f0f0; }
#names li:hover { background: #eef2f7; } #names li.selected { background: #dbe7f5; }
#names .name { font-weight: 600; word-break: break-all; } #names .meta { font-size: 12px; color: #616e7c; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border-bottom: 1px solid #e4e7eb; padding: 3px 8px; text-align: left; white-space: nowrap; }
th { color: #52606d; font-weight: 600; }
tr.picked-a td { background: #e8f1fb; } tr.picked-b td { background: #fdf1e6; }
pre { background: #f8f9fb; padding: 8px 10px; border-radius: 4px; overflow: auto; max-height: 360px; margin: 0; white-space: pre-wrap; word-break: break-word; }
.agent { display: inline-block; width: 10px; height: 10px; border-radius: 50%; margin-right: 4px; vertical-align: -1px; }
.blamed { border-bottom: 3px solid; }
.legend span { margin-right: 12px; font-size: 12px; }
ins { background: #d8f3dc; text-decoration: none; } del { background: #fde2e4; }
.tick { font-size: 11px; fill: #52606d; } .label { font-size: 12px; fill: #222; }
svg { display: block; max-width: 100%; height: auto; }
.columns { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
button.link { background: none; border: none; color: #2f6fb0; cursor: pointer; padding: 0; font: inherit; }
`
