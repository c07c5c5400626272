/**
 * Attacks on the console's approval path: a member record (which every member may write) must
 * not steer a person's click to another VM's session.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { approveFrom } from '../../src/relay/console-approve.ts';
import type { Person } from '../../src/relay/console-session.ts';
import { HttpError } from '../../src/approval/requests.ts';
import { sessionFor, type ApprovalCommand } from '../../src/fleet/keys.ts';
import { RelayCommands } from '../../src/relay/commands.ts';
import type { RelayBus } from '../../src/relay/bus.ts';
import { vmId } from '../../testkit/azure-feed.ts';
import { consoleRelayConfig, snapshotOf, type SnapshotMember } from '../../testkit/console.ts';

const config = consoleRelayConfig({ keys: [{ name: 'Ada Lovelace', key: 'console-approve-key-0123456789', role: 'approve' }] });
const ADA: Person = { name: 'Ada Lovelace', role: 'approve', by: 'key' };
const NOW = Date.now();
const iso = (ms: number) => new Date(ms).toISOString();

type Member = SnapshotMember;
const member = (vm: string, resourceId: string | null, eventId: string, eventType = 'Reboot', notBefore = NOW + 3_600_000): Member => ({
  vm,
  resourceId,
  events: [{ eventId, eventType, status: 'Scheduled', notBefore: iso(notBefore), durationInSeconds: -1 }],
  holdsSlot: false,
  heartbeatAt: iso(NOW - 1000),
  heartbeatSeconds: 30,
  stale: false,
});

const snapshot = (groups: Record<string, Member[]>) => snapshotOf(groups, NOW);

function deps(s: ReturnType<typeof snapshotOf>) {
  const sent: ApprovalCommand[] = [];
  const bus = { send: async (c: ApprovalCommand) => (sent.push(c), null) } as unknown as RelayBus;
  return {
    sent,
    d: { config, reader: { read: async () => s } as never, commands: new RelayCommands(config, bus, pino({ level: 'silent' })), arm: null },
  };
}

const form = (vm: string, eventId: string) => new URLSearchParams({ vm, eventId });

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (err: unknown) => (err instanceof HttpError ? err.status : String(err)),
  );

describe("the console's approval, against records a compromised member wrote", () => {
  it("a record that shows one VM but carries another VM's resource id does not send the click to that other VM", async () => {
    // prod-db-1 (group db) has a real pending Reboot E-PROD; test-vm-9 (compromised) writes a record
    // named test-vm-9 with prod-db-1's resource id and an innocuous "Freeze" of the same EventId
    const s = snapshot({
      db: [member('prod-db-1', vmId('prod-db-1'), 'E-PROD')],
      lab: [member('test-vm-9', vmId('prod-db-1'), 'E-PROD', 'Freeze')],
    });
    const { sent, d } = deps(s);
    // the person clicks "Approve test-vm-9" in the lab lane
    const status = await refusal(approveFrom(d, ADA, form('test-vm-9', 'E-PROD'), '127.0.0.1'));
    // what was sent, if anything: a command to prod-db-1's session, for prod-db-1's real event
    expect(sent.map((c) => c.vm)).not.toContain(sessionFor(vmId('prod-db-1')));
    expect(status).toBe(409);
  });

  it('two records listing the same VM name and EventId (one forged, earlier) make the click ambiguous, not the forged one', async () => {
    // the real web-1 lists E1; a forged record also named web-1, with the attacker's own resource id and an earlier NotBefore
    const s = snapshot({
      web: [member('web-1', vmId('web-1'), 'E1')],
      lab: [member('web-1', vmId('evil-1', 'rg-lab'), 'E1', 'Reboot', NOW + 60_000)],
    });
    const { sent, d } = deps(s);
    const status = await refusal(approveFrom(d, ADA, form('web-1', 'E1'), '127.0.0.1'));
    // the person meant the real web-1: the command must never go to the attacker's session (which would answer "approved" itself)
    expect(sent.map((c) => c.vm)).not.toContain(sessionFor(vmId('evil-1', 'rg-lab')));
    expect(status).toBe(409);
  });

  it('a plain record (name and resource id agree, one of it) is still approved', async () => {
    const { sent, d } = deps(snapshot({ web: [member('web-1', vmId('web-1'), 'E1')] }));
    const said = await approveFrom(d, ADA, form('web-1', 'E1'), '127.0.0.1');
    expect(said.status).toBe(202);
    expect(sent.map((c) => c.vm)).toEqual([sessionFor(vmId('web-1'))]);
  });
});

describe("the console's approval: a reason, and a click", () => {
  it('a forced approval needs a reason that says something: spaces or invisible characters are none', async () => {
    const { sent, d } = deps(snapshot({ web: [member('web-1', vmId('web-1'), 'E1')] }));
    for (const reason of ['', '   ', '\u200b\u200b', '\u2060 \ufeff'])
      expect(
        await refusal(approveFrom(d, ADA, new URLSearchParams({ vm: 'web-1', eventId: 'E1', force: 'on', reason }), '127.0.0.1')),
      ).toBe(400);
    expect(sent).toEqual([]);
    await approveFrom(d, ADA, new URLSearchParams({ vm: 'web-1', eventId: 'E1', force: 'on', reason: 'CVE fix' }), '127.0.0.1');
    expect(sent).toMatchObject([{ force: true, reason: 'CVE fix', via: 'console', by: 'Ada Lovelace' }]);
  });

  it('each click is its own command (a second click after a held answer is decided again); one click sent twice is one', async () => {
    const { sent, d } = deps(snapshot({ web: [member('web-1', vmId('web-1'), 'E1')] }));
    const click = (id: string) => approveFrom(d, ADA, new URLSearchParams({ vm: 'web-1', eventId: 'E1', click: id }), '127.0.0.1');
    await click('click-aaaaaaaa');
    await click('click-aaaaaaaa');
    await click('click-bbbbbbbb');
    const [a, b, c] = sent.map((x) => x.id);
    expect(a).toBe(b);
    expect(c).not.toBe(a);
  });
});

describe("the shipped nginx site in front of the console's proxy sign-in", () => {
  it('never passes on a user header the client sent: nginx is a trusted proxy, so the console would believe it', async () => {
    const { readFileSync } = await import('node:fs');
    const conf = readFileSync(new URL('../../config/nginx/se-bridge.conf', import.meta.url), 'utf8').replace(/#[^\n]*/g, '');
    const location = /location \/console \{([^}]*)\}/.exec(conf)![1]!;
    // the header docs/fleet-console.md names for console.proxy.userHeader, overwritten by nginx
    expect(location).toMatch(/proxy_set_header\s+X-Forwarded-User\s+/i);
  });
});
