/**
 * The console's stylesheet and script, served from the relay itself (/console/app.css and
 * /console/app.js; the Content Security Policy allows no other). No framework: the relay makes
 * the HTML, and the script only places the bars on the time axis (from their data attributes)
 * and swaps in the timeline the live stream sends, keeping the focus where it was, and says in
 * the page when the stream is lost and when it is back.
 */

export const CONSOLE_CSS = `
:root{--ink:#1b1f24;--quiet:#57606a;--line:#d0d7de;--bg:#f6f8fa}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;margin:0;color:var(--ink);background:#fff}
header{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem 1.25rem;padding:.75rem 1rem;border-bottom:1px solid var(--line);background:var(--bg)}
header h1{font-size:1.2rem;margin:0}
header form{margin:0}
nav a{margin-right:.75rem;color:#0a5cad}
nav a[aria-current]{font-weight:700;color:var(--ink);text-decoration:none;border-bottom:3px solid var(--ink)}
main{padding:.75rem 1rem}
main.narrow{max-width:36rem;margin:0 auto}
.quiet,.who{color:var(--quiet);margin:0}
.lost{color:#a40e26;font-weight:700}
.ok{color:#1a7f37}
#said{margin:0;flex-basis:100%}
#said:empty{display:none}
form.act{display:block;margin:.2rem 0 0}
form.act button{font-size:.8rem;padding:.15rem .55rem}
textarea{font:inherit;width:100%;max-width:30rem}
.problem{color:#a40e26;font-weight:600}
button{font:inherit;padding:.45rem .9rem;border:1px solid var(--ink);border-radius:.35rem;background:#fff;color:var(--ink);cursor:pointer}
input{font:inherit;padding:.45rem;width:100%;max-width:24rem}
a:focus-visible,button:focus-visible,input:focus-visible{outline:3px solid #0969da;outline-offset:2px}
.lane{margin:1.25rem 0}
.lane h2{font-size:1.05rem;margin:0 0 .2rem}
.facts{margin:0 0 .4rem;color:var(--quiet)}
table{width:100%;border-collapse:collapse;table-layout:fixed}
th,td{border-top:1px solid var(--line);padding:.25rem .4rem;text-align:left;vertical-align:top}
thead th{font-weight:600;color:var(--quiet)}
th[scope=row]{width:14rem;font-weight:600;overflow-wrap:anywhere}
thead th:first-child{width:14rem}
.track{position:relative;overflow:hidden;height:2.2rem;background:repeating-linear-gradient(90deg,transparent 0 calc(25% - 1px),var(--line) calc(25% - 1px) 25%)}
.axis{position:relative;height:1.6rem}
.tick{position:absolute;top:.3rem;transform:translateX(-50%);font-size:.75rem;font-weight:400;white-space:nowrap}
.bar{position:absolute;top:.25rem;display:inline-flex;align-items:center;gap:.25rem;white-space:nowrap;font-size:.8rem;text-decoration:none;color:var(--ink)}
.bar .mark{display:inline-block;width:.5rem;height:1.5rem;border:2px solid;border-radius:.3rem}
.bar .words{background:rgba(255,255,255,.85);padding:0 .15rem;border-radius:.2rem}
.bar:hover .words,.bar:focus-visible .words{text-decoration:underline}
.bar:focus-visible{z-index:2}
.shade{position:absolute;top:0;bottom:0}
.shade.blackout{background:repeating-linear-gradient(135deg,rgba(130,80,223,.22) 0 4px,transparent 4px 10px)}
.shade.closed{background:rgba(101,109,118,.13)}
.now{position:absolute;top:0;bottom:0;width:2px;background:#a40e26;z-index:1}
.collision{position:absolute;top:0;bottom:0;width:0;border-left:3px dashed #9a6700}
.s-scheduled .mark{background:#ddf4ff;border-color:#0969da}
.s-held-budget .mark{background:repeating-linear-gradient(45deg,#fff8c5 0 6px,#fff 6px 12px);border-color:#9a6700;border-style:dashed}
.s-held-calendar .mark{background:repeating-linear-gradient(-45deg,#fbefff 0 6px,#fff 6px 12px);border-color:#8250df;border-style:dashed}
.s-approved .mark{background:#dafbe1;border-color:#1a7f37}
.s-started .mark{background:#1a7f37;border-color:#0f5323}
.s-started .words,.s-unwatched .words{font-weight:700}
.s-unwatched .mark{background:#ffebe9;border-color:#a40e26;border-style:dotted}
.s-completed .mark{background:#d0d7de;border-color:#57606a}
.s-canceled .mark{background:#fff;border-color:#8c959f;border-style:dotted}
.s-canceled .words{text-decoration:line-through}
.tag{display:inline-block;font-size:.75rem;font-weight:600;padding:0 .35rem;border:1px solid var(--quiet);border-radius:1rem;color:var(--quiet)}
.tag.warn{border-color:#9a6700;color:#7d4e00}
.tag.bad{border-color:#a40e26;color:#a40e26}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem}
dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
.sr-only{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}
@media (max-width:640px){
  th[scope=row],thead th:first-child{width:7.5rem}
  .tick:nth-child(2),.tick:nth-child(4){display:none}
  header{padding:.5rem}
  main{padding:.5rem}
}
`;

export const CONSOLE_JS = `'use strict';
(function () {
  var said = document.getElementById('said');
  // an approval's form is sent without leaving the page: its answer is said in the page, and the
  // new state comes with the timeline
  document.addEventListener('submit', function (ev) {
    var form = ev.target;
    if (!said || !form || !form.matches || !form.matches('form[action="/console/approve"]')) return;
    ev.preventDefault();
    var button = form.querySelector('button');
    if (button) button.disabled = true;
    say(said, 'Sending…', 'quiet');
    var body = new URLSearchParams(new FormData(form));
    // each click is a command of its own: sent twice (a retry), it is applied once
    body.set('click', crypto.randomUUID());
    fetch(form.action, { method: 'POST', body: body, headers: { accept: 'application/json' } })
      .then(function (r) { return r.json().then(function (j) { return { ok: r.ok, j: j }; }); })
      .then(function (a) {
        var j = a.j, text = j.heading ? j.heading + ': ' + j.message : (j.error ? j.error.message : 'Done');
        say(said, text, a.ok ? 'ok' : 'lost');
      })
      .catch(function () { say(said, 'The approval could not be sent: try again.', 'lost'); })
      .finally(function () { if (button) button.disabled = false; });
  });
  function say(el, text, kind) { el.textContent = text; el.className = kind; }
  var main = document.getElementById('timeline');
  var live = document.getElementById('live');
  if (!main || !live) return;
  function place(root) {
    root.querySelectorAll('[data-from]').forEach(function (el) {
      var from = Number(el.getAttribute('data-from')), to = Number(el.getAttribute('data-to'));
      var track = el.parentElement, mark = el.querySelector('.mark');
      el.style.left = (from * 100) + '%';
      // a calendar's shade spans its stretch, behind the bars
      if (el.classList.contains('shade')) { el.style.width = (Math.max(0, to - from) * 100) + '%'; return; }
      el.style.top = (0.25 + 1.9 * Number(el.getAttribute('data-line') || 0)) + 'rem';
      // the mark as long as the maintenance, at least a few pixels; its words follow it
      if (track && mark) mark.style.width = Math.max(6, track.clientWidth * Math.max(0, to - from)) + 'px';
    });
    root.querySelectorAll('[data-lines]').forEach(function (el) { el.style.height = (0.3 + 1.9 * Number(el.getAttribute('data-lines'))) + 'rem'; });
    root.querySelectorAll('[data-at]').forEach(function (el) { el.style.left = (Number(el.getAttribute('data-at')) * 100) + '%'; });
  }
  place(main);
  window.addEventListener('resize', function () { place(main); });
  var source = new EventSource('/console/live?range=' + encodeURIComponent(main.getAttribute('data-range') || '24h'));
  source.addEventListener('timeline', function (m) {
    var focused = document.activeElement && main.contains(document.activeElement) ? document.activeElement : null;
    var key = focused ? (focused.getAttribute('href') || focused.textContent) : null;
    main.innerHTML = m.data;
    place(main);
    if (key) {
      var again = Array.prototype.find.call(main.querySelectorAll('a[href], button'), function (a) { return (a.getAttribute('href') || a.textContent) === key; });
      if (again) again.focus();
    }
    say(live, 'Live: updated at ' + new Date().toLocaleTimeString(), 'ok');
  });
  source.onopen = function () { say(live, 'Live', 'ok'); };
  source.onerror = function () {
    // closed for good (the session ended): only a reload signs in again
    say(live, source.readyState === 2 ? 'Disconnected: reload the page to sign in again.' : 'Connection lost: reconnecting…', 'lost');
  };
})();
`;
