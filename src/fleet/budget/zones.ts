/**
 * `zones: one-at-a-time`: early approvals never span two availability zones at once. A member in
 * zone 1 is held while a member of zone 2 is in maintenance (holds a slot or an overflow record);
 * members without a zone (a regional VM) never conflict. The zone of each holder is in its slot
 * record, from its instance metadata.
 */
import type { Versioned } from './stores/port.ts';
import { asSlot, live } from './records.ts';

/** zoneConflict: why taking members of `zones` down now would span two zones (the first holder of another zone), or null. */
export function zoneConflict(
  slots: readonly Versioned[],
  zones: readonly (string | null | undefined)[],
  now: number,
  except?: string,
): string | null {
  const mine = [...new Set(zones.filter((z): z is string => typeof z === 'string' && z !== ''))];
  if (mine.length > 1) return `this maintenance spans zones ${mine.join(' and ')}`;
  const [zone] = mine;
  if (zone === undefined) return null;
  for (const r of slots) {
    const s = asSlot(r.value);
    if (!live(s, now) || s.member === except || !s.zone || s.zone === zone) continue;
    return `zone ${s.zone} is in maintenance (${s.vm ?? s.member}); the group takes one zone at a time`;
  }
  return null;
}
