/**
 * The fleet view's pure parts: reading an Event Grid delivery, keeping Azure's record of an
 * event, what no bridge watches, the order and pages of the pending events, and how the relay's
 * unwatched CloudEvent reads in chat.
 */
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../src/approval/requests.ts';
import { readEventGrid } from '../../src/relay/eventgrid.ts';
import { toUnwatchedCloudEvent } from '../../src/relay/azure-feed.ts';
import { azureEventOf, merged, type AzureRecord } from '../../src/fleet/view/azure.ts';
import { cursorOk, fleetEvents, page, unwatchedIn } from '../../src/fleet/view/events.ts';
import type { FleetSnapshot } from '../../src/fleet/view/snapshot.ts';
import type { GroupStatus } from '../../src/fleet/budget/group.ts';
import { toChatMessage } from '../../src/present/chat-model.ts';
import { eventGridEvent, scheduledEventOf, SUBSCRIPTION, vmId } from '../../testkit/azure-feed.ts';
import { RelayConfig, relaySecrets } from '../../src/relay/config.ts';
import { newFleetKeys } from '../../src/fleet/keys.ts';
import { configProblems } from '../helpers.ts';

const keys = newFleetKeys();
/** A relay's configuration without the fleet view, valid as it is. */
const relayBase = {
  serviceBus: { connectionString: 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=c2VjcmV0LWtleQ==' },
  signingKey: keys.signingKey,
  fleetKey: keys.fleetKey,
};

const NOW = Date.parse('2026-11-27T10:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

function record(vm: string, eventId: string, more: Partial<AzureRecord> = {}): AzureRecord {
  const e = azureEventOf(
    `${vmId(vm)}/providers/Microsoft.Maintenance/scheduledevents/${eventId}`,
    scheduledEventOf({ resourceId: vmId(vm), eventId, notBefore: iso(NOW + 30 * 60_000) }).properties,
    'eventgrid',
    iso(NOW - 60_000),
  );
  if (typeof e === 'string') throw new Error(e);
  const { at, ...fields } = e;
  return { ...fields, firstSeenAt: iso(NOW - 60_000), updatedAt: at, unwatched: [], ...more };
}

function member(
  vm: string,
  events: { eventId: string; status?: string; notBefore?: string | null }[],
  heartbeatAgoMs = 1000,
): GroupStatus['members'][number] {
  return {
    vm,
    resourceId: vmId(vm),
    events: events.map((e) => ({
      eventId: e.eventId,
      eventType: 'Reboot',
      status: e.status ?? 'Scheduled',
      notBefore: e.notBefore === undefined ? iso(NOW + 600_000) : e.notBefore,
      durationInSeconds: -1,
    })),
    holdsSlot: false,
    heartbeatAt: iso(NOW - heartbeatAgoMs),
    heartbeatSeconds: 30,
    stale: heartbeatAgoMs > 90_000,
  };
}

function snapshot(members: GroupStatus['members'][number][], azure: AzureRecord[]): FleetSnapshot {
  const group: GroupStatus = {
    ...{ group: 'g', maxUnavailable: 1, counted: null, store: 's', members, slots: [], skipped: [], unread: [] },
    ...{ unhealthyCountsForSeconds: 3600, collision: null, pause: null },
  };
  return {
    readAt: NOW,
    store: 's',
    groups: [group],
    azure: azure.map((record, i) => ({ name: `azure-${i}`, version: '1', record })),
    unsealed: 0,
    unread: [],
  };
}

describe('an Event Grid delivery', () => {
  const subs = [SUBSCRIPTION];
  const refused = (body: unknown, status: number) => {
    try {
      readEventGrid(body, subs, iso(NOW));
    } catch (err) {
      expect(err).toBeInstanceOf(HttpError);
      expect((err as HttpError).status).toBe(status);
      return;
    }
    throw new Error('taken');
  };

  it('reads both type spellings and both schemas, in lower case resource ids and ISO NotBefore; other types are counted', () => {
    const e = eventGridEvent({ resourceId: vmId('VmOne'), eventId: 'E1', notBefore: 'Mon, 30 Nov 2026 10:00:00 GMT' });
    const write = eventGridEvent({ resourceId: vmId('vm2'), eventId: 'E2' }, 'microsoft.maintenance/scheduledevents/write');
    const other = eventGridEvent({ resourceId: vmId('vm3'), eventId: 'E3' }, 'Microsoft.Resources.ResourceWriteSuccess');
    const read = readEventGrid([e, write, other], subs, iso(NOW));
    expect(read).toMatchObject({
      ignored: 1,
      events: [
        { eventId: 'E1', resourceId: vmId('VmOne').toLowerCase(), notBefore: '2026-11-30T10:00:00Z', resources: ['VmOne'] },
        { eventId: 'E2' },
      ],
    });
    const cloud = {
      specversion: '1.0',
      id: 'c1',
      source: `/subscriptions/${SUBSCRIPTION}`,
      type: e.eventType,
      time: iso(NOW),
      data: (e as { data: unknown }).data,
    };
    expect(readEventGrid(cloud, subs, iso(NOW))).toMatchObject({ events: [{ eventId: 'E1' }] });
  });

  it('answers the validation handshake, and refuses a malformed batch whole, a foreign topic, a foreign VM', () => {
    const validation = {
      id: 'v',
      topic: `/subscriptions/${SUBSCRIPTION}`,
      eventType: 'Microsoft.EventGrid.SubscriptionValidationEvent',
      data: { validationCode: 'abc' },
    };
    expect(readEventGrid([validation], subs, iso(NOW))).toEqual({ validationCode: 'abc' });
    refused({ not: 'a list' }, 400);
    refused([eventGridEvent({ resourceId: vmId('a'), eventId: 'E' }), 'text'], 400);
    refused([{ ...eventGridEvent({ resourceId: vmId('a'), eventId: 'E' }), id: undefined }], 400);
    refused([{ ...validation, data: {} }], 400);
    // an event without a resource of a VM or scale set
    refused([eventGridEvent({ resourceId: '/subscriptions/x', eventId: 'E' })], 400);
    refused([eventGridEvent({ resourceId: vmId('a'), eventId: 'E' }, undefined, '11111111-1111-1111-1111-111111111111')], 403);
    refused([{ ...validation, topic: '/subscriptions/11111111-1111-1111-1111-111111111111' }], 403);
    const foreignVm = eventGridEvent({ resourceId: vmId('a').replace(SUBSCRIPTION, '22222222-2222-2222-2222-222222222222'), eventId: 'E' });
    refused([foreignVm], 403);
  });
});

describe("Azure's record of an event", () => {
  const e = (status: string, at: number) => {
    const r = azureEventOf(
      `${vmId('a')}/providers/Microsoft.Maintenance/scheduledevents/E`,
      scheduledEventOf({ resourceId: vmId('a'), eventId: 'E', status, notBefore: iso(NOW) }).properties,
      'eventgrid',
      iso(at),
    );
    if (typeof r === 'string') throw new Error(r);
    return r;
  };

  it('takes a newer report, keeps the first sighting and what was said, and never brings an ended event back', () => {
    const first = merged(null, e('Scheduled', NOW), iso(NOW))!;
    expect(first).toMatchObject({ status: 'Scheduled', firstSeenAt: iso(NOW), unwatched: [] });
    expect(merged(first, e('Scheduled', NOW + 1000), iso(NOW + 1000))).toBeNull();
    const said = { ...first, unwatched: [{ vm: 'a', why: 'no-member' as const, at: iso(NOW), by: 'r1' }] };
    const started = merged(said, e('Started', NOW + 2000), iso(NOW + 2000))!;
    expect(started).toMatchObject({ status: 'Started', firstSeenAt: iso(NOW), unwatched: said.unwatched });
    expect(merged(started, e('Scheduled', NOW + 1000), iso(NOW + 3000))).toBeNull();
    const over = merged(started, e('Completed', NOW + 4000), iso(NOW + 4000))!;
    expect(merged(over, e('Started', NOW + 5000), iso(NOW + 5000))).toBeNull();
  });
});

describe('what no bridge watches', () => {
  it('no member at once; a stale member, or one that does not list it, after the grace; a member that lists it never', () => {
    const s = snapshot(
      [member('watching', [{ eventId: 'E-W' }]), member('silent', [{ eventId: 'E-OLD' }], 3_600_000), member('blind', [])],
      [
        record('ghost', 'E-G'),
        record('watching', 'E-W'),
        record('silent', 'E-S'),
        record('blind', 'E-B'),
        record('done', 'E-D', { status: 'Completed' }),
      ],
    );
    const found = (after?: number) =>
      unwatchedIn(s, { afterSeconds: after }, NOW)
        .map((f) => `${f.vm}:${f.why}`)
        .sort();
    // first seen a minute ago: the default grace (two heartbeats of 30 s) has passed; two minutes' has not
    expect(found()).toEqual(['blind:not-listed', 'ghost:no-member', 'silent:stale-member']);
    expect(found(120)).toEqual(['ghost:no-member']);
  });

  it('a scale set names its instances: each matched to the member under the set with that name', () => {
    const set =
      '/subscriptions/00000000-0000-0000-0000-000000000000/resourcegroups/rg/providers/microsoft.compute/virtualmachinescalesets/web';
    const r: AzureRecord = { ...record('x', 'E-SET'), resourceId: set, resources: ['web_0', 'web_1'] };
    const inst = { ...member('web_0', [{ eventId: 'E-SET' }]), resourceId: `${set}/virtualMachines/0` };
    expect(unwatchedIn(snapshot([inst], [r]), {}, NOW).map((f) => `${f.vm}:${f.why}`)).toEqual(['web_1:no-member']);
  });
});

describe('the pending events', () => {
  const events = [
    ...Array.from({ length: 7 }, (_, i) => member(`m${i}`, [{ eventId: `E${i}`, notBefore: iso(NOW + (7 - i) * 60_000) }])),
    member('later', [{ eventId: 'E-NULL', notBefore: null }]),
  ];
  const s = snapshot(events, [record('ghost', 'E-G'), record('m0', 'E0', { status: 'Completed' })]);

  it('by NotBefore then VM, Azure-only ones beside them, an event Azure says is over left out', () => {
    const list = fleetEvents(s, {}, NOW);
    expect(list.map((e) => e.vm)).toEqual(['m6', 'm5', 'm4', 'm3', 'm2', 'm1', 'ghost', 'later']);
    expect(list.find((e) => e.vm === 'ghost')).toMatchObject({ member: 'none', group: null, unwatched: { why: 'no-member' } });
    expect(fleetEvents(s, {}, NOW, { status: 'unwatched' }).map((e) => e.vm)).toEqual(['ghost']);
    expect(fleetEvents(s, {}, NOW, { group: 'other' })).toEqual([]);
  });

  it('pages by the key of the last event shown: every page, in order, none twice', () => {
    const all = fleetEvents(s, {}, NOW);
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 10; i++) {
      const p = page(all, 3, cursor);
      seen.push(...p.events.map((e) => e.vm));
      cursor = p.next;
      if (cursor === null) break;
      expect(cursorOk(cursor)).toBe(true);
    }
    expect(seen).toEqual(all.map((e) => e.vm));
    expect(cursorOk('not-base64-json')).toBe(false);
    expect(cursorOk(Buffer.from('[1,2,3]').toString('base64url'))).toBe(false);
  });
});

describe("the relay's unwatched CloudEvent", () => {
  it('has a stable id from the EventId and the VM, the VM as its source, and reads as what it is in chat', () => {
    const r = record('ghost', 'E-G');
    const f = {
      record: r,
      vm: 'ghost',
      why: 'stale-member' as const,
      group: 'web',
      resourceId: r.resourceId,
      heartbeatAt: iso(NOW - 3_600_000),
    };
    const a = toUnwatchedCloudEvent(f, r, iso(NOW));
    const b = toUnwatchedCloudEvent(f, r, iso(NOW + 5000));
    expect(a.id).toBe(b.id);
    expect(a.id).toMatch(/^unwatched\/[0-9a-f]{32}$/);
    expect(toUnwatchedCloudEvent({ ...f, vm: 'other' }, r, iso(NOW)).id).not.toBe(a.id);
    expect(a).toMatchObject({ type: 'azure.scheduledevent.unwatched', source: vmId('ghost').toLowerCase(), subject: 'E-G' });
    const chat = toChatMessage(a);
    expect(chat.title).toBe('ghost: maintenance no bridge watches');
    expect(chat.plainWords).toMatch(
      /^Azure lists maintenance \(Reboot, Scheduled\) that no bridge watches: its bridge stopped \(last heard/,
    );
  });
});

describe('the configuration of the fleet view', () => {
  it('a member without a budget is valid; the reserved group is refused by its path', () => {
    const store = { type: 'blob', connectionString: 'UseDevelopmentStorage=true' };
    expect(configProblems({ fleet: { group: 'web', store } })).toEqual([]);
    expect(configProblems({ fleet: { group: 'se-bridge-azure', store } })).toEqual([
      "fleet.group: is reserved: the relay keeps Azure's own records of the fleet's events under se-bridge-azure",
    ]);
  });

  it("the relay's fleet, read keys and Azure's feed are checked together, each problem by its path", () => {
    const problems = (over: Record<string, unknown>) => {
      const r = RelayConfig.safeParse({ ...relayBase, ...over });
      return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    };
    const store = { type: 'blob', connectionString: 'UseDevelopmentStorage=true' };
    expect(problems({ fleet: { store }, readKeys: ['a-read-key-of-16-chars'] })).toEqual([]);
    expect(problems({ readKeys: ['a-read-key-of-16-chars'] })).toEqual(['readKeys: need fleet: the read API reads its store']);
    expect(problems({ readKeys: ['short'], fleet: { store } })).toEqual(['readKeys.0: must be at least 16 characters']);
    expect(problems({ azure: { subscriptions: [SUBSCRIPTION] } })).toEqual([
      "azure: needs fleet: Azure's events are matched to the members' records in its store",
    ]);
    const both = { key: 'an-event-grid-key-1234', entra: { tenantId: SUBSCRIPTION, audience: 'api://x' } };
    expect(problems({ fleet: { store }, azure: { subscriptions: [SUBSCRIPTION], eventGrid: both } })).toEqual([
      'azure.eventGrid.key: set either key or entra: one way deliveries prove they come from Event Grid',
    ]);
    expect(problems({ fleet: { store }, azure: { subscriptions: ['not-a-guid'] } })).toEqual([
      'azure.subscriptions.0: must be a subscription id (a GUID)',
    ]);
  });

  it('needs Service Bus and its keys only for approvals to members: the fleet view alone needs neither; each rule by its path', () => {
    const problems = (c: Record<string, unknown>) => {
      const r = RelayConfig.safeParse(c);
      return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    };
    const fleet = { store: { type: 'blob', connectionString: 'UseDevelopmentStorage=true' } };
    expect(problems({ fleet })).toEqual([]);
    expect(problems({ fleet, apiSecrets: [`whsec_${Buffer.alloc(32, 1).toString('base64')}`] })).toEqual([]);
    expect(problems({})).toEqual([
      'serviceBus: set serviceBus (approvals to members) or fleet (the fleet view): the relay has nothing to serve',
    ]);
    expect(problems({ serviceBus: relayBase.serviceBus })).toEqual([
      'signingKey: is required with serviceBus: it signs every approval command',
      "fleetKey: is required with serviceBus: every VM's link key is derived from it",
    ]);
    expect(problems({ fleet, slack: { signingSecret: 'a-slack-signing-secret' } })).toEqual([
      'slack: needs serviceBus: a Slack approval goes to the VM through it',
    ]);
    expect(problems({ fleet, publicKey: keys.publicKey })).toEqual(['publicKey: needs signingKey, whose public key it is']);
    expect(problems(relayBase)).toEqual([]);
  });

  it('refuses plain http wherever a token or signing keys travel, loopback aside, each by its path', () => {
    const problems = (over: Record<string, unknown>) => {
      const r = RelayConfig.safeParse({ ...relayBase, ...over });
      return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    };
    const plain = (host: string) => ({
      fleet: { store: { type: 'blob', accountUrl: `http://${host}:10000/devstoreaccount1` } },
      azure: {
        subscriptions: [SUBSCRIPTION],
        eventGrid: { entra: { tenantId: SUBSCRIPTION, audience: 'api://x', jwksUrl: `http://${host}/keys` } },
        arm: { endpoint: `http://${host}:8443` },
      },
    });
    expect(problems(plain('store.example.com'))).toEqual([
      'fleet.store.accountUrl: must be https: the Entra ID token would travel over plain http to a host that is not loopback',
      "azure.eventGrid.entra.jwksUrl: must be https: the tenant's signing keys would travel over plain http to a host that is not loopback",
      "azure.arm.endpoint: must be https: the relay's Entra ID token would travel over plain http to a host that is not loopback",
    ]);
    for (const host of ['127.0.0.1', 'localhost', '[::1]']) expect(problems(plain(host)), host).toEqual([]);
    // a member's store too
    expect(configProblems({ fleet: { group: 'web', store: { type: 'blob', accountUrl: 'http://10.0.0.5:10000/acct' } } })).toEqual([
      'fleet.store.accountUrl: must be https: the Entra ID token would travel over plain http to a host that is not loopback',
    ]);
  });

  it("keeps the read keys, the Event Grid key, the store's connection string and the relay's sinks' secrets out of its logs", () => {
    const hook = 'https://hooks.slack.com/services/T0/B0/abcdefabcdefabcdef';
    const c = RelayConfig.parse({
      ...relayBase,
      fleet: { store: { type: 'blob', connectionString: 'AccountName=x;AccountKey=c2VjcmV0LXN0b3JlLWtleQ==' } },
      readKeys: ['a-read-key-of-16-chars'],
      azure: { subscriptions: [SUBSCRIPTION], eventGrid: { key: 'an-event-grid-key-1234' } },
      sinks: [{ name: 'oncall', type: 'slack', webhookUrl: hook }],
    });
    const secrets = relaySecrets(c);
    for (const s of ['a-read-key-of-16-chars', 'an-event-grid-key-1234', 'AccountName=x;AccountKey=c2VjcmV0LXN0b3JlLWtleQ==', hook])
      expect(secrets).toContain(s);
  });
});
