/**
 * A VM's resource id is parsed, never concatenated: only a virtual machine's or a scale-set
 * instance's id is one, and the path of an acknowledgement is a fixed template of its segments.
 */
import { describe, expect, it } from 'vitest';
import {
  eventResourceFrom,
  eventResourceOf,
  parseEventResource,
  parseVmResourceId,
  resourceIdText,
  scheduledEventsPath,
} from '../../src/azure/resource-id.ts';

const SUB = '0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0';
const vm = `/subscriptions/${SUB}/resourceGroups/rg-web/providers/Microsoft.Compute/virtualMachines/web-31`;
const instance = `/subscriptions/${SUB}/resourceGroups/mc_rg/providers/Microsoft.Compute/virtualMachineScaleSets/aks-pool/virtualMachines/3`;

describe('parseVmResourceId', () => {
  it("reads a virtual machine's and a scale-set instance's id, the fixed words in any case", () => {
    expect(parseVmResourceId(vm)).toEqual({ subscriptionId: SUB, resourceGroup: 'rg-web', scaleSet: null, name: 'web-31' });
    expect(parseVmResourceId(instance)).toEqual({ subscriptionId: SUB, resourceGroup: 'mc_rg', scaleSet: 'aks-pool', name: '3' });
    expect(parseVmResourceId(vm.toLowerCase())).toMatchObject({ resourceGroup: 'rg-web', name: 'web-31' });
    expect(parseVmResourceId(vm.replace(SUB, SUB.toUpperCase()))).toMatchObject({ subscriptionId: SUB });
    expect(parseVmResourceId(vm.replace('rg-web', 'grüne_Gruppe(1).x'))).toMatchObject({ resourceGroup: 'grüne_Gruppe(1).x' });
    expect(resourceIdText(parseVmResourceId(instance)!)).toBe(instance);
  });

  it.each([
    ['a URL', `http://127.0.0.1:9/subscriptions/${SUB}/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/web-31`],
    ['a scheme-relative URL', `//127.0.0.1:9${vm}`],
    ['another action on the VM, with a query and a fragment', `${vm}/restart?api-version=2024-07-01#`],
    ['a query', `${vm}?api-version=2024-07-01`],
    ['a fragment', `${vm}#x`],
    ['an encoded slash', vm.replace('web-31', 'web%2F31')],
    ['an encoded dot segment', vm.replace('rg-web', '%2e%2e')],
    ['a dot segment', vm.replace('rg-web', '..')],
    ['a group ending in a dot', vm.replace('rg-web', 'rg.')],
    ['an empty segment', vm.replace('rg-web', '')],
    ['a doubled slash', vm.replace('/providers', '//providers')],
    ['a trailing slash', `${vm}/`],
    ['a subscription that is no GUID', vm.replace(SUB, 's')],
    ['another provider', vm.replace('Microsoft.Compute', 'Microsoft.Storage')],
    ['another type', vm.replace('virtualMachines', 'disks')],
    ['a scale set itself', instance.replace('/virtualMachines/3', '')],
    ['an instance that is no number', instance.replace('/3', '/three')],
    ['more segments', `${vm}/extensions/x`],
    ['a name with a space', vm.replace('web-31', 'web 31')],
    ['a name with a backslash', vm.replace('web-31', 'web\\31')],
    ['a name starting with an underscore', vm.replace('web-31', '_web')],
    ['a name ending in a dash', vm.replace('web-31', 'web-')],
    ['a control character', vm.replace('web-31', 'web\n31')],
    ['no leading slash', vm.slice(1)],
    ['nothing', ''],
    ['something longer than any id', `${vm.slice(0, -6)}${'a'.repeat(600)}`],
  ])('refuses %s', (_, text) => {
    expect(parseVmResourceId(text)).toBeNull();
  });

  it('refuses what is not text', () => {
    for (const v of [null, undefined, 42, {}, [vm]]) expect(parseVmResourceId(v)).toBeNull();
  });
});

describe('where an event is acknowledged', () => {
  it("is the VM itself, or an instance's scale set, each segment encoded into a fixed template", () => {
    expect(scheduledEventsPath(eventResourceOf(parseVmResourceId(vm)!))).toBe(
      `/subscriptions/${SUB}/resourceGroups/rg-web/providers/Microsoft.Compute/virtualMachines/web-31/providers/Microsoft.Maintenance/scheduledevents`,
    );
    expect(scheduledEventsPath(eventResourceOf(parseVmResourceId(instance)!))).toBe(
      `/subscriptions/${SUB}/resourceGroups/mc_rg/providers/Microsoft.Compute/virtualMachineScaleSets/aks-pool/providers/Microsoft.Maintenance/scheduledevents`,
    );
    const odd = parseVmResourceId(vm.replace('rg-web', 'grüne(1)'))!;
    expect(scheduledEventsPath(eventResourceOf(odd))).toContain('/resourceGroups/gr%C3%BCne(1)/');
  });

  it("reads Azure's records on a VM, a scale set or an instance, and nothing else", () => {
    const set = instance.replace('/virtualMachines/3', '');
    expect(parseEventResource(set)).toMatchObject({ type: 'virtualMachineScaleSets', name: 'aks-pool' });
    expect(parseEventResource(instance)).toBeNull();
    expect(eventResourceFrom(instance)).toEqual(parseEventResource(set));
    expect(eventResourceFrom(vm.toLowerCase())).toMatchObject({ type: 'virtualMachines', name: 'web-31' });
    expect(eventResourceFrom(`${set}/extensions/x`)).toBeNull();
    expect(eventResourceFrom(`/subscriptions/${SUB}`)).toBeNull();
  });
});
