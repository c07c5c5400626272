/**
 * What an approval `via: arm` would act on (src/relay/arm-target.ts), found from the fleet's
 * records as members write them into the store (any member may write any of them) and, where
 * Azure's feed is configured, from Azure's own records of the event: the VM, the resource whose
 * event is acknowledged, the event and its Resources, the VM's one group; or the refusal, with its
 * status and code, before anything is sent.
 */
import { describe, expect, it } from 'vitest';
import { eventResourceText } from '../../src/azure/resource-id.ts';
import { memberKey, memberName } from '../../src/fleet/budget/records.ts';
import type { AzureEvent } from '../../src/fleet/view/azure.ts';
import { snapshotOf } from '../../src/fleet/view/snapshot.ts';
import { armTarget } from '../../src/relay/arm-target.ts';
import { SUBSCRIPTION, vmId } from '../../testkit/azure-feed.ts';
import { refusalOf } from '../helpers.ts';

const NOW = Date.parse('2026-03-02T12:00:00Z');
const E = (n: number) => `00000000-0000-4000-d000-${String(n).padStart(12, '0')}`;
const setId = (set: string) =>
  `/subscriptions/${SUBSCRIPTION}/resourceGroups/rg-fleet/providers/Microsoft.Compute/virtualMachineScaleSets/${set}`;
const instanceId = (set: string, id: string) => `${setId(set)}/virtualMachines/${id}`;

interface Written {
  group: string;
  vm: string;
  resourceId: string;
  events?: { eventId: string; status?: string }[];
}

/** snapshot: the fleet as a read of the store gives it, the members' records written as their bridges write them. */
function snapshot(members: Written[]) {
  const records = members.map((m) => {
    const key = memberKey({ name: m.vm, resourceId: m.resourceId });
    const events = (m.events ?? []).map((e) => ({
      ...{ eventId: e.eventId, eventType: 'Reboot', status: e.status ?? 'Scheduled', notBefore: '2026-03-02T12:15:00Z' },
      ...{ durationInSeconds: -1, approved: false },
    }));
    const value = {
      member: key,
      vm: m.vm,
      resourceId: m.resourceId,
      heartbeatAt: new Date(NOW).toISOString(),
      heartbeatSeconds: 5,
      events,
      slot: null,
    };
    return { name: `${m.group}/${memberName(key)}`, version: '1', value };
  });
  return snapshotOf(records, 'test', NOW);
}

/** azure: Azure's record of an event at `resourceId`. */
const azure = (resourceId: string, eventId: string, o: { status?: string; resources?: string[] } = {}): AzureEvent => ({
  ...{ eventId, resourceId: resourceId.toLowerCase(), subscriptionId: SUBSCRIPTION.toLowerCase() },
  ...{
    resources: o.resources ?? [resourceId.slice(resourceId.lastIndexOf('/') + 1)],
    eventType: 'Reboot',
    status: o.status ?? 'Scheduled',
  },
  ...{
    notBefore: '2026-03-02T12:15:00Z',
    durationInSeconds: -1,
    description: 'Virtual machine is going to be restarted',
    source: 'resourcegraph',
  },
  at: new Date(NOW).toISOString(),
});

/** refusal: the refusal armTarget answers, as status and code (and its message). */
const refusal = (...args: Parameters<typeof armTarget>) => refusalOf(() => armTarget(...args));

describe('armTarget: what the request names', () => {
  it("a VM's resource id, a scale-set instance's, or a name of at most 80 characters without a slash or a space; anything else is NOT_A_VM", () => {
    const s = snapshot([]);
    for (const vm of [`${vmId('web-1')}/restart`, '/subscriptions/x', 'web 1', 'a/b', 'x'.repeat(81), '', `https://evil${vmId('web-1')}`])
      expect({ vm, ...refusal(s, vm, E(1), null) }).toMatchObject({ vm, status: 400, code: 'NOT_A_VM' });
    // a well-formed name or id that no record lists: the event is unknown, not the VM's form
    for (const vm of ['x'.repeat(80), 'web-1', vmId('web-1'), instanceId('set-1', '3')])
      expect({ vm, ...refusal(s, vm, E(1), null) }).toMatchObject({ vm, status: 404, code: 'UNKNOWN_EVENT' });
  });

  it('a name two resource ids have, or an id the records of two groups name, is VM_AMBIGUOUS', () => {
    const twice = snapshot([
      { group: 'a', vm: 'db-1', resourceId: vmId('db-1', 'rg-a'), events: [{ eventId: E(1) }] },
      { group: 'b', vm: 'DB-1', resourceId: vmId('db-1', 'rg-b'), events: [{ eventId: E(1) }] },
    ]);
    expect(refusal(twice, 'db-1', E(1), null)).toMatchObject({
      status: 409,
      code: 'VM_AMBIGUOUS',
      // both resource ids named, one after the other, so a person can pick one
      message: expect.stringMatching(/^2 VMs are named db-1 \(\S*rg-a\S*, \S*rg-b\S*\): name it by its resource id$/i),
    });
    const groups = snapshot([
      { group: 'a', vm: 'db-1', resourceId: vmId('db-1'), events: [{ eventId: E(1) }] },
      { group: 'b', vm: 'impostor', resourceId: vmId('db-1') },
    ]);
    for (const vm of ['db-1', vmId('db-1')])
      expect(refusal(groups, vm, E(1), null)).toMatchObject({
        status: 409,
        code: 'VM_AMBIGUOUS',
        message: expect.stringMatching(/^the records of 2 groups \(a, b\)/),
      });
  });
});

describe("armTarget without Azure's feed: the members' records are the hint", () => {
  it("a VM's event, found by its name or its id in any case, at the VM itself, in its group", () => {
    const s = snapshot([
      { group: 'web', vm: 'web-1', resourceId: vmId('web-1'), events: [{ eventId: E(1) }] },
      { group: 'web', vm: 'web-2', resourceId: vmId('web-2'), events: [{ eventId: E(2) }] },
    ]);
    for (const [vm, eventId] of [
      ['web-1', E(1)],
      ['WEB-1', E(1).toUpperCase()],
      [vmId('web-1').toUpperCase(), E(1)],
    ] as const) {
      const t = armTarget(s, vm, eventId, null);
      expect(t).toMatchObject({
        name: 'web-1',
        group: { group: 'web', member: { vm: 'web-1' } },
        unsure: null,
        recordId: vmId('web-1').toLowerCase(),
      });
      expect(eventResourceText(t.resource)).toBe(vmId('web-1').toLowerCase());
      expect(t.event).toMatchObject({ eventId: E(1), eventStatus: 'Scheduled', resources: ['web-1'] });
    }
  });

  it("an event other VMs' records list too names them in its Resources; the record that lists the event decides the name", () => {
    const s = snapshot([
      { group: 'kv', vm: 'kv-a', resourceId: vmId('kv-1') },
      { group: 'kv', vm: 'kv-1', resourceId: vmId('kv-1'), events: [{ eventId: E(3) }] },
      { group: 'kv', vm: 'kv-2', resourceId: vmId('kv-2'), events: [{ eventId: E(3) }] },
      { group: 'kv', vm: 'kv-3', resourceId: vmId('kv-3'), events: [{ eventId: E(3) }] },
      { group: 'kv', vm: 'kv-4', resourceId: vmId('kv-4'), events: [{ eventId: E(4) }] },
    ]);
    const t = armTarget(s, vmId('kv-1'), E(3), null);
    expect(t.name).toBe('kv-1');
    expect(t.event.resources).toEqual(['kv-1', 'kv-2', 'kv-3']);
  });

  it('an event not Scheduled is NOT_APPROVABLE; a record with no resource id is NOT_A_VM; a scale-set instance is unsure', () => {
    const s = snapshot([
      { group: 'g', vm: 'started-1', resourceId: vmId('started-1'), events: [{ eventId: E(5), status: 'Started' }] },
      { group: 'g', vm: 'noid-1', resourceId: 'https://evil.example/x', events: [{ eventId: E(6) }] },
      { group: 'g', vm: 'set-1_3', resourceId: instanceId('set-1', '3'), events: [{ eventId: E(7) }] },
    ]);
    expect(refusal(s, 'started-1', E(5), null)).toMatchObject({
      status: 409,
      code: 'NOT_APPROVABLE',
      message: expect.stringMatching(/is Started, not Scheduled/),
    });
    expect(refusal(s, 'noid-1', E(6), null)).toMatchObject({
      status: 400,
      code: 'NOT_A_VM',
      message: expect.stringMatching(/the record of noid-1 gives no VM's resource id/),
    });
    expect(refusal(s, 'started-1', E(6), null)).toMatchObject({ status: 404, code: 'UNKNOWN_EVENT' });
    const t = armTarget(s, 'set-1_3', E(7), null);
    expect(t.unsure).toMatch(/^set-1_3 is an instance of scale set set-1/);
    expect(eventResourceText(t.resource)).toBe(setId('set-1').toLowerCase());
    // its record is kept where Azure keeps a scale set's: under the scale set, naming the instance in Resources
    expect(t).toMatchObject({ recordId: setId('set-1').toLowerCase(), event: { resources: ['set-1_3'] } });
  });
});

describe("armTarget with Azure's feed: Azure's record is the authority", () => {
  it('the event Azure lists for that VM, as Azure says it; not listed, listed for another VM, or not Scheduled, refused', () => {
    const s = snapshot([{ group: 'web', vm: 'web-1', resourceId: vmId('web-1'), events: [{ eventId: E(8) }] }]);
    const listed = [azure(vmId('web-1'), E(8), { resources: ['web-1', 'web-9'] })];
    const t = armTarget(s, 'web-1', E(8).toUpperCase(), listed);
    expect(t).toMatchObject({ name: 'web-1', unsure: null, group: { group: 'web' }, recordId: vmId('web-1').toLowerCase() });
    expect(t.event).toMatchObject({
      eventId: E(8),
      resources: ['web-1', 'web-9'],
      description: 'Virtual machine is going to be restarted',
    });
    expect(refusal(s, 'web-1', E(8), [])).toMatchObject({ status: 404, code: 'NOT_LISTED_BY_AZURE' });
    expect(refusal(s, 'web-1', E(8), [azure(vmId('other-1'), E(8))])).toMatchObject({ status: 404, code: 'NOT_LISTED_BY_AZURE' });
    expect(refusal(s, 'web-1', E(8), [azure(vmId('web-1'), E(9))])).toMatchObject({ status: 404, code: 'NOT_LISTED_BY_AZURE' });
    for (const status of ['Started', 'Completed', 'Canceled', 'Scheduledish'])
      expect(refusal(s, 'web-1', E(8), [azure(vmId('web-1'), E(8), { status })])).toMatchObject({ status: 409, code: 'NOT_APPROVABLE' });
    expect(armTarget(s, 'web-1', E(8), [azure(vmId('web-1'), E(8), { status: 'scheduled' })]).name).toBe('web-1');
  });

  it("a VM no record names, by its name as Azure's Resources or resource id say it; two such resources are VM_AMBIGUOUS", () => {
    const s = snapshot([]);
    const ghost = armTarget(s, 'ghost-1', E(10), [azure(vmId('ghost-1'), E(10), { resources: [] })]);
    expect(ghost).toMatchObject({ name: 'ghost-1', vm: null, group: null, recordId: vmId('ghost-1').toLowerCase() });
    expect(armTarget(s, 'GHOST-2', E(10), [azure(vmId('other'), E(10), { resources: ['ghost-2'] })]).recordId).toBe(
      vmId('other').toLowerCase(),
    );
    expect(refusal(s, 'ghost-1', E(10), [azure(vmId('ghost-1', 'rg-a'), E(10)), azure(vmId('ghost-1', 'rg-b'), E(10))])).toMatchObject({
      status: 409,
      code: 'VM_AMBIGUOUS',
      message: expect.stringMatching(/for 2 resources named ghost-1/),
    });
  });

  it("a scale set's event is an instance's only when Azure's Resources name the instance", () => {
    const s = snapshot([{ group: 'g', vm: 'set-1_3', resourceId: instanceId('set-1', '3'), events: [{ eventId: E(11) }] }]);
    const t = armTarget(s, instanceId('set-1', '3'), E(11), [azure(setId('set-1'), E(11), { resources: ['set-1_3', 'set-1_4'] })]);
    expect(eventResourceText(t.resource)).toBe(setId('set-1').toLowerCase());
    expect(t).toMatchObject({ unsure: null, recordId: setId('set-1').toLowerCase() });
    expect(refusal(s, instanceId('set-1', '3'), E(11), [azure(setId('set-1'), E(11), { resources: ['set-1_4'] })])).toMatchObject({
      code: 'NOT_LISTED_BY_AZURE',
    });
    expect(refusal(s, instanceId('set-1', '3'), E(11), [azure(setId('set-2'), E(11), { resources: ['set-1_3'] })])).toMatchObject({
      code: 'NOT_LISTED_BY_AZURE',
    });
  });
});

describe('armTarget: the name and the Resources it says', () => {
  it("a VM no record names, asked by its resource id, is named by the id's last segment, with no group", () => {
    const t = armTarget(snapshot([]), vmId('ghost-3').toUpperCase(), E(12), [azure(vmId('ghost-3'), E(12), { resources: [] })]);
    expect(t).toMatchObject({ name: 'GHOST-3', group: null, recordId: vmId('ghost-3').toLowerCase() });
    expect(t.vm).not.toBeNull();
  });

  it("without Azure's feed, every other VM whose record lists the event is in its Resources once, a record with no resource id too", () => {
    const s = snapshot([
      { group: 'kv', vm: 'kv-1', resourceId: vmId('kv-1'), events: [{ eventId: E(13) }] },
      { group: 'kv', vm: 'kv-noid', resourceId: 'not-a-resource-id', events: [{ eventId: E(13) }] },
      { group: 'kv', vm: 'kv-2', resourceId: vmId('kv-2', 'rg-a'), events: [{ eventId: E(13) }] },
      { group: 'kv', vm: 'kv-2', resourceId: vmId('kv-2', 'rg-b'), events: [{ eventId: E(13) }] },
    ]);
    const resources = armTarget(s, 'kv-1', E(13), null).event.resources;
    expect(resources[0]).toBe('kv-1');
    expect([...resources].sort()).toEqual(['kv-1', 'kv-2', 'kv-noid']);
  });
});

describe('armTarget: what each refusal says', () => {
  it('says what a VM must be, which event no record lists, and what Azure does not list or says of it', () => {
    const s = snapshot([{ group: 'web', vm: 'web-1', resourceId: vmId('web-1'), events: [{ eventId: E(14) }] }]);
    expect(refusal(s, 'a/b', E(14), null).message).toMatch(/^vm must be a VM's resource id \(\/subscriptions\/<guid>\/resourceGroups\//);
    expect(refusal(s, 'web-1', E(15), null).message).toBe(`no member's record lists event ${E(15)} for web-1`);
    expect(refusal(s, 'web-1', E(14), []).message).toMatch(
      new RegExp(`^Azure does not list event ${E(14)} for web-1 now: only an event Azure lists is approved through Resource Manager`),
    );
    expect(refusal(s, 'web-1', E(14), [azure(vmId('web-1'), E(14), { status: 'Started' })]).message).toBe(
      `Azure says event ${E(14)} of web-1 is Started, not Scheduled`,
    );
  });

  it('of the records of one VM, the one that lists the event names it, wherever it sorts', () => {
    const s = snapshot([
      { group: 'kv', vm: 'kv-0', resourceId: vmId('kv-1') },
      { group: 'kv', vm: 'kv-1', resourceId: vmId('kv-1'), events: [{ eventId: E(16) }] },
      { group: 'kv', vm: 'kv-z', resourceId: vmId('kv-1') },
    ]);
    expect(armTarget(s, vmId('kv-1'), E(16), null)).toMatchObject({ name: 'kv-1', group: { member: { vm: 'kv-1' } } });
  });

  it("with Azure's feed: a VM's own event is its own whatever Resources say; a name no record gives matches only Azure's records of that VM", () => {
    const s = snapshot([{ group: 'web', vm: 'web-1', resourceId: vmId('web-1'), events: [{ eventId: E(17) }] }]);
    expect(armTarget(s, 'web-1', E(17), [azure(vmId('web-1'), E(17), { resources: [] })]).recordId).toBe(vmId('web-1').toLowerCase());
    expect(refusal(snapshot([]), 'ghost-4', E(18), [azure(vmId('other-4'), E(18))])).toMatchObject({
      status: 404,
      code: 'NOT_LISTED_BY_AZURE',
    });
  });
});

describe('armTarget: records that lie about their names', () => {
  it('a record whose name is the text of a resource id names nothing: the id asked decides', () => {
    const s = snapshot([
      { group: 'g', vm: vmId('x-1'), resourceId: vmId('y-1'), events: [{ eventId: E(19) }] },
      { group: 'g', vm: vmId('x-1'), resourceId: vmId('z-1'), events: [{ eventId: E(19) }] },
    ]);
    expect(refusal(s, vmId('x-1'), E(19), null)).toMatchObject({ status: 404, code: 'UNKNOWN_EVENT' });
  });

  it('of the records of one VM, one that lists other events does not name it: the one that lists this event does', () => {
    const s = snapshot([
      { group: 'kv', vm: 'kv-0', resourceId: vmId('kv-1'), events: [{ eventId: E(20) }] },
      { group: 'kv', vm: 'kv-1', resourceId: vmId('kv-1'), events: [{ eventId: E(21) }] },
    ]);
    expect(armTarget(s, vmId('kv-1'), E(21), null)).toMatchObject({ name: 'kv-1', event: { eventId: E(21) } });
  });

  it("Azure's status must be Scheduled itself, not a word that ends so", () => {
    const s = snapshot([{ group: 'web', vm: 'web-1', resourceId: vmId('web-1'), events: [{ eventId: E(22) }] }]);
    expect(refusal(s, 'web-1', E(22), [azure(vmId('web-1'), E(22), { status: 'Unscheduled' })])).toMatchObject({
      status: 409,
      code: 'NOT_APPROVABLE',
    });
  });
});
