import { CloudEvent, HTTP } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import { cloudEventId, encodeSource, fromJson, sourceFor, toApprovedCloudEvent, toCloudEvent } from '../../src/pipeline/cloudevent.ts';
import { diff } from '../../src/pipeline/diff.ts';
import { collisionIdOf } from '../../src/pipeline/notices.ts';
import { identityFrom } from '../../src/imds/identity.ts';
import { fixtureDocument } from '../helpers.ts';

const d1 = fixtureDocument('live-migration-1.json');
const d2 = fixtureDocument('live-migration-2.json');
const d3 = fixtureDocument('live-migration-3.json');
const compute = {
  name: 'WestNO_1',
  resourceId: '/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/WestNO_1',
  subscriptionId: 's',
  resourceGroupName: 'rg',
  vmScaleSetName: '',
  location: 'norwaywest',
  zone: '2',
};
const vm1 = identityFrom(compute);
const vm0 = identityFrom({ ...compute, name: 'WestNO_0', resourceId: compute.resourceId.replace('NO_1', 'NO_0') });

describe('toCloudEvent', () => {
  const [scheduled] = diff(d1, d2);
  const ce = toCloudEvent(scheduled!, { vm: vm1, observedAt: '2022-04-11T22:10:00.000Z' });

  it("marks a drill's CloudEvents with the extension drill: true, which the SDK accepts, and no real event's", () => {
    expect(ce.drill).toBeUndefined();
    const drillEvent = { ...scheduled!.event, eventId: 'drill-0b7f1c2e-5d7a-4f43-9a55-3c1e2f6b8a90' };
    const dce = toCloudEvent({ ...scheduled!, event: drillEvent }, { vm: vm1, observedAt: '2022-04-11T22:10:00.000Z' });
    expect(dce.drill).toBe(true);
    expect(dce.id).toBe('drill-0b7f1c2e-5d7a-4f43-9a55-3c1e2f6b8a90/scheduled');
    const sdk = new CloudEvent<unknown>({ ...dce }, true);
    expect(sdk.validate()).toBe(true);
    expect(sdk.toJSON()).toEqual({ ...dce });
    // the HTTP binary binding carries it as a header
    expect(HTTP.binary(sdk).headers['ce-drill']).toBe(true);
  });

  it('follows the CloudEvents contract', () => {
    // the SDK, strict, is the judge: it validates the event and sees exactly our attributes
    const sdk = new CloudEvent<unknown>({ ...ce }, true);
    expect(sdk.validate()).toBe(true);
    expect(sdk.toJSON()).toEqual({ ...ce });
    // and the JSON event format is byte for byte what the SDK writes (events stored before stay comparable)
    expect(JSON.stringify(ce)).toBe(JSON.stringify(sdk));
    expect(Object.isFrozen(ce)).toBe(true);
    expect(ce).toMatchObject({
      specversion: '1.0',
      id: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123/scheduled',
      type: 'azure.scheduledevent.scheduled',
      source: compute.resourceId,
      subject: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123',
      time: '2022-04-11T22:10:00.000Z',
      datacontenttype: 'application/json',
      incarnation: 2,
    });
    expect(ce.data).toEqual({
      eventId: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123',
      eventType: 'Freeze',
      eventStatus: 'Scheduled',
      eventSource: 'Platform',
      resourceType: 'VirtualMachine',
      resources: ['WestNO_0', 'WestNO_1'],
      notBefore: '2022-04-11T22:26:58Z',
      durationInSeconds: 5,
      description: 'Virtual machine is being paused because of a memory-preserving Live Migration operation.',
      documentIncarnation: 2,
      affectsThisVm: true,
      vm: {
        name: 'WestNO_1',
        resourceId: compute.resourceId,
        vmScaleSetName: null,
        subscriptionId: 's',
        resourceGroupName: 'rg',
        location: 'norwaywest',
        zone: '2',
      },
      raw: d2.events[0]!.raw,
    });
  });

  it('is immutable', () => {
    expect(Object.isFrozen(ce)).toBe(true);
    expect(() => {
      (ce as unknown as { id: string }).id = 'x';
    }).toThrow();
  });

  it('gives the same id on every VM and at every observation time', () => {
    const other = toCloudEvent(scheduled!, { vm: vm0, observedAt: '2022-04-11T22:11:30.000Z' });
    expect(other.id).toBe(ce.id);
    expect(other.source).not.toBe(ce.source);
  });

  it('gives each transition of one event its own id', () => {
    const [started] = diff(d2, d3);
    const [completed] = diff(d3, fixtureDocument('live-migration-4.json'));
    const ids = [scheduled!, started!, completed!].map((t) => toCloudEvent(t, { vm: vm1, observedAt: ce.time }).id);
    expect(new Set(ids).size).toBe(3);
    expect(ids[1]).toBe('C7061BAC-AFDC-4513-B24B-AA5F13A16123/started');
  });

  it('ids an update by the values it changed', () => {
    const moved = (nb: string) => ({ ...d2, incarnation: 3, events: [{ ...d2.events[0]!, notBefore: nb }] });
    const a = toCloudEvent(diff(d2, moved('2022-04-12T00:00:00Z'))[0]!, { vm: vm1, observedAt: ce.time });
    const a2 = toCloudEvent(diff(d2, moved('2022-04-12T00:00:00Z'))[0]!, { vm: vm0, observedAt: '2030-01-01T00:00:00Z' });
    const b = toCloudEvent(diff(d2, moved('2022-04-13T00:00:00Z'))[0]!, { vm: vm1, observedAt: ce.time });
    expect(a.type).toBe('azure.scheduledevent.updated');
    expect(a.id).toMatch(/^C7061BAC-AFDC-4513-B24B-AA5F13A16123\/updated\/[0-9a-f]{16}$/);
    expect(a2.id).toBe(a.id);
    expect(b.id).not.toBe(a.id);
    expect(a.data.previous!.notBefore).toBe('2022-04-11T22:26:58Z');
    expect(a.data.notBefore).toBe('2022-04-12T00:00:00Z');
  });

  it('keeps ids within 128 characters', () => {
    expect(cloudEventId('updated', 'E'.repeat(200), 'abc')).toMatch(/^sha256\/[0-9a-f]{64}$/);
    expect(cloudEventId('scheduled', 'short')).toBe('short/scheduled');
  });

  it('falls back to a URN source without a resource id, and marks events of other VMs', () => {
    const vm = identityFrom(null, { name: 'some vm' });
    expect(sourceFor(vm)).toBe('urn:se-bridge:vm:some%20vm');
    const e = toCloudEvent(scheduled!, { vm, observedAt: ce.time });
    expect(e.data.affectsThisVm).toBe(false);
    expect(e.data.vm.resourceId).toBeNull();
  });

  it('matches this VM case-insensitively', () => {
    const e = toCloudEvent(scheduled!, { vm: identityFrom(null, { name: 'westno_0' }), observedAt: ce.time });
    expect(e.data.affectsThisVm).toBe(true);
  });

  it('builds the approved event with the approval record', () => {
    const a = toApprovedCloudEvent(d2.events[0]!, 2, { by: 'alice', via: 'api', at: '2022-04-11T22:12:00Z' }, 'r1', {
      vm: vm1,
      observedAt: ce.time,
    });
    expect(a.type).toBe('azure.scheduledevent.approved');
    expect(a.id).toBe('C7061BAC-AFDC-4513-B24B-AA5F13A16123/approved/r1');
    expect(a.data.approval).toEqual({ by: 'alice', via: 'api', at: '2022-04-11T22:12:00Z' });
  });

  it('survives the JSON event format and the HTTP binding unchanged', () => {
    const revived = fromJson(JSON.stringify(ce));
    expect(revived).toEqual(ce);
    const message = HTTP.structured(new CloudEvent<unknown>({ ...ce }));
    const back = HTTP.toEvent(message) as CloudEvent<unknown>;
    expect(back.id).toBe(ce.id);
    expect(back.incarnation).toBe(2);
    expect(back.data).toEqual(ce.data);
  });
});

describe('source of a VM whose resource id is not plain ASCII', () => {
  const id = '/subscriptions/s/resourceGroups/rg-café (prod)/providers/Microsoft.Compute/virtualMachines/vm 1';
  it.each([
    [compute.resourceId, compute.resourceId],
    [id, '/subscriptions/s/resourceGroups/rg-caf%C3%A9%20(prod)/providers/Microsoft.Compute/virtualMachines/vm%201'],
    ['/rg/100%/x?y#z', '/rg/100%25/x%3Fy%23z'],
    ['/a/[b]|c"d<e>^`{}\\', '/a/%5Bb%5D%7Cc%22d%3Ce%3E%5E%60%7B%7D%5C'],
    ['1:x/y:z', '1%3Ax/y:z'],
    ['urn:vm:café', 'urn:vm:caf%C3%A9'],
  ])('%s -> %s', (input, expected) => {
    expect(encodeSource(input)).toBe(expected);
    expect(decodeURIComponent(encodeSource(input))).toBe(input);
  });

  it('makes a CloudEvent that validates, with the raw id kept in data.vm', () => {
    const vm = identityFrom({ ...compute, resourceId: id, resourceGroupName: 'rg-café (prod)' });
    const [t] = diff(d1, d2);
    const ce = toCloudEvent(t!, { vm, observedAt: '2022-04-11T22:10:00.000Z' });
    expect(new CloudEvent<unknown>({ ...ce }, true).validate()).toBe(true);
    expect(ce.source).toBe(encodeSource(id));
    expect(ce.data.vm.resourceId).toBe(id);
  });
});

describe('ids of a transition that recurs', () => {
  it('appends the occurrence from the second one on, and hashes only what is too long', () => {
    expect(cloudEventId('scheduled', 'E')).toBe('E/scheduled');
    expect(cloudEventId('scheduled', 'E', undefined, 1)).toBe('E/scheduled');
    expect(cloudEventId('scheduled', 'E', undefined, 2)).toBe('E/scheduled/2');
    expect(cloudEventId('updated', 'E', 'abc', 3)).toBe('E/updated/abc/3');
    expect(cloudEventId('started', 'E'.repeat(200), undefined, 2)).not.toBe(cloudEventId('started', 'E'.repeat(200)));
  });
  it('maps the occurrence into the id and nothing else', () => {
    const [t] = diff(d1, d2);
    const first = toCloudEvent(t!, { vm: vm1, observedAt: '2022-04-11T22:10:00.000Z' });
    const again = toCloudEvent(t!, { vm: vm1, observedAt: '2022-04-11T22:10:00.000Z', occurrence: 2 });
    expect(again.id).toBe(`${first.id}/2`);
    expect(again.data).toEqual(first.data);
  });
});

describe('the id of a fleet.collision', () => {
  it('is a function of the wave and the set of EventIds due: their order and repeats change nothing, another set or wave is another id', () => {
    const id = collisionIdOf('wave-1', ['B', 'A', 'C']);
    expect(id).toMatch(/^fleet\.collision\/[0-9a-f]{40}$/);
    expect(collisionIdOf('wave-1', ['C', 'A', 'B'])).toBe(id);
    expect(collisionIdOf('wave-1', ['A', 'B', 'C', 'A'])).toBe(id);
    expect(collisionIdOf('wave-1', ['A', 'B'])).not.toBe(id);
    expect(collisionIdOf('wave-2', ['A', 'B', 'C'])).not.toBe(id);
    // what a record says is untrusted: no EventId, however it is spelled, makes two sets read as one
    expect(collisionIdOf('wave-1', ['A\nB'])).not.toBe(collisionIdOf('wave-1', ['A', 'B']));
    expect(collisionIdOf('wave-1\nA', ['B'])).not.toBe(collisionIdOf('wave-1', ['A', 'B']));
  });
});
