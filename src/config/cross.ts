/**
 * The rules between sections of the configuration that no one section's schema can say: the
 * health block and the calendar each given once (at the top, or under `fleet`), a probe that
 * waits for health checks that exist, a rule bound to windows that exist. Each problem names its
 * path; `validate` and every command report them with the schema's, at once.
 */
import type { CalendarConfig } from '../calendar/config.ts';
import type { HealthConfig } from '../health/config.ts';
import type { BridgeConfig } from './schema.ts';

/** healthOf: this VM's health block, at the top or under `fleet`, or undefined. */
export const healthOf = (c: Pick<BridgeConfig, 'health' | 'fleet'>): HealthConfig | undefined => c.health ?? c.fleet?.health;

/** calendarOf: this VM's calendar, at the top or under `fleet` (the group's), or undefined. */
export const calendarOf = (c: Pick<BridgeConfig, 'calendar' | 'fleet'>): CalendarConfig | undefined => c.calendar ?? c.fleet?.calendar;

type Raw = Record<string, unknown>;

/** objectOf: a value as read, when it is a mapping. */
const objectOf = (v: unknown): Raw | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Raw) : undefined);

/**
 * crossProblems: what the sections say of each other, each with its path, read from the
 * configuration as read (expanded), so they are said beside the schema's own problems rather than
 * once those are fixed. `problemAt` says which keys have problems of their own (their own value,
 * not one inside it): a rule reads only what it can tell, so one problem never brings a false one.
 */
export function crossProblems(raw: unknown, problemAt: (path: string) => boolean): string[] {
  const root = objectOf(raw);
  if (root === undefined) return [];
  return [...healthProblems(root), ...calendarProblems(root, problemAt)];
}

/** healthProblems: the health block given once, and there for a probe that waits for it. */
function healthProblems(root: Raw): string[] {
  const problems: string[] = [];
  const fleet = objectOf(root.fleet);
  // a block with problems of its own is there all the same
  const given = root.health !== undefined || fleet?.health !== undefined;
  if (root.health !== undefined && fleet?.health !== undefined)
    problems.push('health: is given twice, here and as fleet.health; keep one (the fleet budget and the probe share it)');
  (Array.isArray(root.sinks) ? root.sinks : []).forEach((sink, i) => {
    const s = objectOf(sink);
    if (s?.type === 'probe' && s.health === true && !given)
      problems.push(`sinks[${i}].health: true needs health checks to wait for: a health block at the top, or fleet.health`);
  });
  return problems;
}

/** calendarProblems: the calendar given once, and windows for a rule bound to them. */
function calendarProblems(root: Raw, problemAt: (path: string) => boolean): string[] {
  const fleet = objectOf(root.fleet);
  const calendars = [
    { at: 'calendar', value: root.calendar },
    { at: 'fleet.calendar', value: fleet?.calendar },
  ].filter((c) => c.value !== undefined);
  const problems =
    calendars.length === 2 ? ['calendar: is given twice, here and as fleet.calendar; keep one (under fleet, the group shares it)'] : [];
  // windows that cannot be read (a calendar, or its windows, not of their shape) are not said to be missing;
  // a window with a problem of its own is a window all the same
  if (calendars.some((c) => problemAt(c.at) || problemAt(`${c.at}.windows`))) return problems;
  const windows = calendars.some((c) => {
    const w = objectOf(c.value)?.windows;
    return Array.isArray(w) && w.length > 0;
  });
  const rules = objectOf(root.approval)?.rules;
  (Array.isArray(rules) ? rules : []).forEach((rule, i) => {
    if (objectOf(rule)?.within === 'windows' && !windows)
      problems.push(`approval.rules[${i}].within: windows needs calendar.windows to approve in (none are configured)`);
  });
  return problems;
}
