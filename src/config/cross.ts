/**
 * The rules between sections of the configuration that no one section's schema can say: the
 * health block and the calendar each given once (at the top, or under `fleet`), a probe that
 * waits for health checks that exist, a rule bound to windows that exist. Each problem names its
 * path; `validate` and every command report them with the schema's.
 */
import type { CalendarConfig } from '../calendar/config.ts';
import type { HealthConfig } from '../health/config.ts';
import type { BridgeConfig } from './schema.ts';

/** healthOf: this VM's health block, at the top or under `fleet`, or undefined. */
export const healthOf = (c: Pick<BridgeConfig, 'health' | 'fleet'>): HealthConfig | undefined => c.health ?? c.fleet?.health;

/** calendarOf: this VM's calendar, at the top or under `fleet` (the group's), or undefined. */
export const calendarOf = (c: Pick<BridgeConfig, 'calendar' | 'fleet'>): CalendarConfig | undefined => c.calendar ?? c.fleet?.calendar;

/** calendarProblems: what the rules and the calendar say of each other, each with its path. */
export function calendarProblems(c: BridgeConfig): string[] {
  const twice =
    c.calendar !== undefined && c.fleet?.calendar !== undefined
      ? ['calendar: is given twice, here and as fleet.calendar; keep one (under fleet, the group shares it)']
      : [];
  return [
    ...twice,
    ...c.approval.rules.flatMap((r, i) =>
      r.within === 'windows' && (calendarOf(c)?.windows.length ?? 0) === 0
        ? [`approval.rules[${i}].within: windows needs calendar.windows to approve in (none are configured)`]
        : [],
    ),
  ];
}

/** healthProblems: what the health block and the sinks that wait for it say of each other, each with its path. */
export function healthProblems(c: BridgeConfig): string[] {
  const problems: string[] = [];
  if (c.health !== undefined && c.fleet?.health !== undefined)
    problems.push('health: is given twice, here and as fleet.health; keep one (the fleet budget and the probe share it)');
  c.sinks.forEach((s, i) => {
    if (s.type === 'probe' && (s as { health?: unknown }).health === true && healthOf(c) === undefined)
      problems.push(`sinks[${i}].health: true needs health checks to wait for: a health block at the top, or fleet.health`);
  });
  return problems;
}
