/**
 * The approval page: plain, accessible HTML (no script, no framework, works on a phone) that
 * shows the event in plain words with the time left, one Approve button, and the result.
 */
import { type ChatMessage, utcText, vmList } from '../present/chat-model.ts';

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** documentStart: a page's doctype and the start of its head (a phone's width, kept out of search engines), to its title. */
export function documentStart(title: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>`;
}

function layout(title: string, nonce: string, body: string): string {
  return `${documentStart(title)}
<style nonce="${nonce}">
  body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;margin:0;background:#f4f5f7;color:#1b1f24}
  main{max-width:34rem;margin:0 auto;padding:1.5rem 1rem}
  .card{background:#fff;border-radius:.5rem;box-shadow:0 1px 3px rgba(0,0,0,.12);padding:1.25rem 1.5rem}
  h1{font-size:1.35rem;margin:0 0 .75rem}
  dl{display:grid;grid-template-columns:max-content 1fr;gap:.35rem 1rem;margin:0 0 1.25rem}
  dt{font-weight:600}dd{margin:0;word-break:break-word}
  button{font:inherit;font-weight:600;color:#fff;background:#0a7a4b;border:0;border-radius:.4rem;padding:.75rem 1.25rem;width:100%;cursor:pointer}
  button:focus-visible{outline:3px solid #1b6ec2;outline-offset:2px}
  .note{color:#57606a;font-size:.9rem;margin-top:1rem}
  details{margin:0 0 1rem}input[type=text]{font:inherit;width:100%;box-sizing:border-box;padding:.4rem}
  .ok{border-left:6px solid #0a7a4b}.err{border-left:6px solid #c4314b}
</style>
</head>
<body><main>${body}</main></body>
</html>`;
}

/** The page's way past a fleet budget: a person's explicit choice with a reason, on the record. */
const FORCE = `<details><summary>Approve past the group's maintenance budget</summary>
<p><label><input type="checkbox" name="force" id="force"> Approve even if the group's slots are all held</label></p>
<p><label for="reason">Reason (required, kept on the record)</label><br><input type="text" name="reason" id="reason" maxlength="2000"></p>
</details>`;

export function approvalPage(msg: ChatMessage, token: string, nonce: string, fleet = false): string {
  const nb = msg.notBefore;
  const facts: [string, string][] = [
    ['Event', `${msg.eventType} (${msg.eventStatus})`],
    ['VMs', vmList(msg)],
    ['Requested by', msg.source === 'User' ? 'an administrator (User)' : 'Azure (Platform)'],
    ['Starts', nb ? `not before ${utcText(nb.iso)} (${nb.timeLeft})` : 'now'],
    ['Expected impact', msg.duration],
    ['EventId', msg.eventId],
  ];
  if (msg.description !== '') facts.push(['Details', msg.description]);
  return layout(
    'Approve maintenance',
    nonce,
    `<div class="card">
<h1>${escapeHtml(msg.title)}</h1>
<dl>${facts.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join('')}</dl>
<form method="post" action="/v1/approve">
<input type="hidden" name="token" value="${escapeHtml(token)}">
${fleet ? FORCE : ''}<button type="submit" id="approve">Approve: start the maintenance now</button>
</form>
<p class="note">Approving tells Azure it may start now instead of waiting for the time above. It releases the event for every VM listed.</p>
</div>`,
  );
}

export function resultPage(ok: boolean, heading: string, detail: string, nonce: string): string {
  return layout(
    heading,
    nonce,
    `<div class="card ${ok ? 'ok' : 'err'}" role="${ok ? 'status' : 'alert'}"><h1>${escapeHtml(heading)}</h1><p>${escapeHtml(detail)}</p></div>`,
  );
}

/** relayApprovalPage: the relay knows only what the link's token says; the VM checks the rest. */
export function relayApprovalPage(t: { eventId: string; vm: string; expires: string }, token: string, nonce: string): string {
  const facts: [string, string][] = [
    ['VM', t.vm],
    ['EventId', t.eventId],
    ['Link valid until', utcText(t.expires)],
  ];
  return layout(
    'Approve maintenance',
    nonce,
    `<div class="card">
<h1>Approve scheduled maintenance</h1>
<dl>${facts.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join('')}</dl>
<form method="post" action="/v1/approve">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<button type="submit" id="approve">Approve: start the maintenance now</button>
</form>
<p class="note">Approving tells Azure it may start now instead of waiting for NotBefore. The VM checks that the event is still scheduled before it does.</p>
</div>`,
  );
}
