/**
 * The kinds the counting proxy (testkit/counting-proxy.ts) sorts a fleet store's blobs into, by
 * which the benchmarks say lost writes per hand-off: only `slot-<n>` is a slot; the collision
 * notices, overflow records, the pause and the breaker share its prefix and are counted apart.
 */
import { describe, expect, it } from 'vitest';
import { recordKind } from '../../testkit/counting-proxy.ts';

describe('the kinds of a fleet store’s blobs', () => {
  it('counts only slot-<n> as a slot, and the records that share its prefix apart', () => {
    const at = (name: string) => recordKind(`/devstoreaccount1/se-bridge-fleet/group/${name}.json`);
    expect(at('slot-0')).toBe('slot');
    expect(at('slot-12')).toBe('slot');
    expect(at('slot-wave-0a1b')).toBe('wave');
    expect(at('slot-x-vm-a-1234')).toBe('overflow');
    expect(at('slot-pause')).toBe('slot-pause');
    expect(at('slot-breaker')).toBe('slot-breaker');
    expect(at('member-vm-a-1234')).toBe('member');
    expect(at('queue-0001-0002-vm-a')).toBe('queue');
    expect(at('asking-0001-vm-a')).toBe('queue');
  });
});
