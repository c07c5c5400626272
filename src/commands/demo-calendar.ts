/**
 * The calendars of `se-bridge demo --fleet`: api-0 and api-1 in group "api" (members of the fleet
 * view, no budget), both approved by a policy that approves at any time but a blackout. api-0's
 * calendar has a blackout that covers today; api-1 has no calendar. api-1 is approved at once;
 * api-0's maintenance is foretold to fall inside the blackout (`calendar.conflict`), its policy
 * approves nothing, a person's approval is answered 409 BLACKOUT, and a person's forced approval,
 * with a reason, goes past it on the record (`data.approval.forced`, the reason naming the blackout).
 */
import { randomBytes } from 'node:crypto';
import { conflictText } from '../calendar/conflict.ts';
import { must } from '../lib/must.ts';
import { secretKey, signatureHeaders } from '../lib/standard-webhooks.ts';
import type { BridgeEvent } from '../pipeline/cloudevent.ts';
import { ask, imdsReadsSince, say, startMember, until, type DemoContext, type Member } from './demo-kit.ts';

const BLACKOUT = 'release-freeze';
/** How many IMDS reads with the event listed show that the policy had its chances, and approved nothing. */
const READS = 4;

/** day: the UTC date `days` from now, YYYY-MM-DD. */
const day = (days: number): string => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);

/** calendarDemo returns whether api-0 was held by its blackout while api-1 was approved, and forced past it on the record. */
export async function calendarDemo(ctx: DemoContext): Promise<{ ok: boolean; members: Member[] }> {
  // from yesterday to the day after tomorrow (whole dates, UTC): the blackout covers the demo, whatever the hour
  const [from, to] = [day(-1), day(2)];
  say(
    `\nCalendars: api-0 and api-1 in group "api" (members of the fleet view, no budget); api-0's calendar has a blackout, ${BLACKOUT}, from ${from} to ${to} (UTC); api-1 has none. The policy approves every Reboot at once, at any time but a blackout.`,
  );
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const seen = new Map<string, BridgeEvent[]>();
  const members: Member[] = [];
  for (const name of ['api-0', 'api-1']) {
    const config = {
      approval: { secret, rules: [{ match: {}, action: 'approve' }] },
      server: { listen: '127.0.0.1:0' },
      fleet: { group: 'api', store: ctx.store, heartbeatSeconds: 5 },
      ...(name === 'api-0' ? { calendar: { timeZone: 'UTC', blackouts: [{ name: BLACKOUT, from, to }] } } : {}),
    };
    const events: BridgeEvent[] = [];
    seen.set(name, events);
    members.push(await startMember(ctx, name, config, { tickMs: 20, onCommitted: (e) => events.push(...e) }));
  }
  const [a, b] = [must(members[0], 'api-0'), must(members[1], 'api-1')];
  const of = (m: Member, type: string) => must(seen.get(m.name), m.name).find((e) => e.type === `azure.scheduledevent.${type}`);

  const added = Date.now();
  const eventId = a.sim.addEvent({ EventType: 'Reboot', noticeMs: 15 * 60_000 }).eventId;
  b.sim.addEvent({ EventType: 'Reboot', noticeMs: 15 * 60_000 });
  await until(() => b.sim.startRequests.length > 0, "api-1's approval");
  say('  api-1: approved by policy (no calendar)');
  const conflict = must((await until(() => of(a, 'calendar.conflict'), "api-0's calendar.conflict")).data.calendar, 'the conflict');
  say(`  api-0: calendar.conflict: ${conflictText(conflict)}`);
  say(`    advice: ${conflict.advice.join('; or ')}`);
  // the policy decides at every read: after these, it had its chances
  await until(() => imdsReadsSince(a.sim, added) >= READS, "api-0's reads of IMDS");
  const reads = imdsReadsSince(a.sim, added);
  const waited = a.sim.startRequests.length === 0;
  say(
    waited
      ? `  api-0: held by the calendar: ${reads} reads of IMDS since its Reboot appeared, and the policy approved nothing`
      : '  api-0: approved by the policy inside its blackout',
  );

  // a person asks on api-0's own approval server (what `se-bridge approve` does), first without force
  const server = must(a.bridge.approvalServerUrl, "api-0's approval server");
  const key = must(secretKey(secret), 'the approval secret');
  const post = (id: string, body: Record<string, unknown>) => {
    const text = JSON.stringify({ eventId, ...body });
    const headers = { 'content-type': 'application/json', ...signatureHeaders([key], id, text) };
    return ask(ctx.http, `${server}/v1/approvals`, { method: 'POST', headers, body: text });
  };
  const held = await post('demo-calendar-1', { approver: 'change-board' });
  say(`  POST /v1/approvals for api-0 (a person, without force): ${held.status} ${held.text}`);
  const reason = 'a security fix that cannot wait';
  const forced = await post('demo-calendar-2', { approver: 'change-board', reason, force: true });
  say(`  POST /v1/approvals for api-0 with "force": true and a reason: ${forced.status} ${forced.text}`);
  const approved = await until(() => of(a, 'approved'), "api-0's approved CloudEvent");
  const approval = approved.data.approval;
  say(`  api-0: azure.scheduledevent.approved, data.approval ${JSON.stringify(approval)}`);

  const ok =
    waited &&
    held.status === 409 &&
    forced.status === 200 &&
    a.sim.startRequests.length === 1 &&
    approval?.forced === true &&
    (approval.reason ?? '').includes(`inside the blackout ${BLACKOUT}`);
  say(
    ok
      ? '\napi-0 was held by its calendar while api-1 was approved; the forced approval went past the blackout, on the record.'
      : '\nSomething went wrong: see above.',
  );
  return { ok, members };
}
