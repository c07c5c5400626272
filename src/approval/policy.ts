/**
 * The approval policy: ordered rules, first match wins, default `await` (a human decides;
 * NotBefore still applies). An event naming several VMs is approved automatically only by its
 * leader (the first name in Resources) unless the rule says `approveFrom: any`: approving
 * releases the event for every VM it names. Only Scheduled events that name this VM are ever
 * approved automatically.
 */
import { z } from 'zod';
import { EVENT_SOURCES, EVENT_TYPES } from '../pipeline/filter.ts';
import { affects, isLeader } from '../imds/identity.ts';
import type { ScheduledEvent } from '../imds/wire.ts';

const oneOrMany = <T extends z.ZodType>(t: T) => z.union([t, z.array(t).min(1)]);

const RuleMatch = z.strictObject({
  eventType: oneOrMany(z.enum(EVENT_TYPES)).optional().describe('The event types the rule takes: one or a list.'),
  eventSource: oneOrMany(z.enum(EVENT_SOURCES)).optional().describe('Platform or User: one or a list.'),
  eventStatus: z.enum(['Scheduled', 'Started']).optional().describe('The status the event must have.'),
  minDurationSeconds: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('DurationInSeconds bounds; an unknown duration (-1) never satisfies them.'),
  maxDurationSeconds: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('The longest DurationInSeconds the rule takes (an unknown duration never matches).'),
  affectsThisVm: z.boolean().optional().describe('true: only events that name this VM; false: only events that do not.'),
  resources: z
    .string()
    .min(1)
    .optional()
    .describe('A resource name pattern (`*` matches any run of characters, case-insensitive): any listed VM matching it.'),
  minSecondsToNotBefore: z.number().int().optional().describe('Seconds left until NotBefore, when the rule is evaluated.'),
  maxSecondsToNotBefore: z.number().int().optional().describe('Match only once NotBefore is at most this many seconds away.'),
});

export const ACTIONS = ['approve', 'approveAfterHooks', 'await', 'never'] as const;
export type Action = (typeof ACTIONS)[number];

export const Rule = z.strictObject({
  name: z.string().min(1).optional().describe('A name for the rule, in logs and in the approval record.'),
  match: RuleMatch.prefault({}),
  action: z
    .enum(ACTIONS)
    .describe('approve: at once; approveAfterHooks: once every preparation succeeded; await: a person decides; never: nobody approves.'),
  within: z
    .enum(['windows', 'any', 'always'])
    .default('any')
    .describe(
      'How the calendar binds it: windows (only inside a window, outside blackouts), any (any time but a blackout) or always (blackouts too: for a Freeze of a few seconds).',
    ),
  approveFrom: z
    .enum(['leader', 'any'])
    .default('leader')
    .describe('leader (default): only the first VM in Resources approves automatically; any: whichever VM sees it first.'),
});
export type Rule = z.infer<typeof Rule>;

export interface Decision {
  readonly action: Action;
  /** The index of the rule that matched, or null for the default. */
  readonly rule: number | null;
  readonly reason: string;
}

function list<T>(v: T | T[] | undefined): T[] | undefined {
  return v === undefined ? undefined : Array.isArray(v) ? v : [v];
}

function glob(pattern: string): RegExp {
  return new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    'i',
  );
}

export function matches(m: z.infer<typeof RuleMatch>, e: ScheduledEvent, vmName: string, now: number): boolean {
  const types = list(m.eventType);
  if (types && !(types as string[]).includes(e.eventType)) return false;
  const sources = list(m.eventSource);
  if (sources && !(sources as string[]).includes(e.eventSource)) return false;
  if (m.eventStatus !== undefined && m.eventStatus !== e.eventStatus) return false;
  if (m.minDurationSeconds !== undefined && (e.durationInSeconds < 0 || e.durationInSeconds < m.minDurationSeconds)) return false;
  if (m.maxDurationSeconds !== undefined && (e.durationInSeconds < 0 || e.durationInSeconds > m.maxDurationSeconds)) return false;
  if (m.affectsThisVm !== undefined && m.affectsThisVm !== affects(e.resources, vmName)) return false;
  if (m.resources !== undefined) {
    const re = glob(m.resources);
    if (!e.resources.some((r) => re.test(r))) return false;
  }
  if (m.minSecondsToNotBefore !== undefined || m.maxSecondsToNotBefore !== undefined) {
    if (e.notBefore === null) return false;
    const left = (Date.parse(e.notBefore) - now) / 1000;
    if (m.minSecondsToNotBefore !== undefined && left < m.minSecondsToNotBefore) return false;
    if (m.maxSecondsToNotBefore !== undefined && left > m.maxSecondsToNotBefore) return false;
  }
  return true;
}

/** decide applies the rules to one event as this VM sees it. */
export function decide(rules: readonly Rule[], e: ScheduledEvent, vmName: string, now: number = Date.now()): Decision {
  const i = rules.findIndex((r) => matches(r.match, e, vmName, now));
  const rule = i >= 0 ? rules[i]! : null;
  const label = rule === null ? 'default' : (rule.name ?? `rules[${i}]`);
  if (rule === null) return { action: 'await', rule: null, reason: 'no rule matched: a human decides' };
  if (rule.action === 'approve' || rule.action === 'approveAfterHooks') {
    if (e.eventStatus !== 'Scheduled') return { action: 'never', rule: i, reason: `${label}: only Scheduled events can be approved` };
    if (!affects(e.resources, vmName)) return { action: 'await', rule: i, reason: `${label}: the event does not name this VM` };
    if (rule.approveFrom === 'leader' && e.resources.length > 1 && !isLeader(e.resources, vmName)) {
      return { action: 'await', rule: i, reason: `${label}: ${e.resources[0]} (the first VM listed) approves for the group` };
    }
  }
  return { action: rule.action, rule: i, reason: label };
}
