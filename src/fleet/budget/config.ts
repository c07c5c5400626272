/**
 * The fleet budget's configuration (`fleet`): the group a VM belongs to, how many of its members
 * may be in maintenance at once because of an early approval, and where the group's slots and
 * member records live (stores/config.ts).
 */
import { z } from 'zod';
import { FleetStoreConfig, storeTimeoutMs } from './stores/config.ts';
import { HealthConfig } from '../../health/config.ts';
import { CalendarConfig } from '../../calendar/config.ts';
import { HeartbeatSeconds, MaxUnavailable } from './schemas.ts';
import { RateConfig } from './rate.ts';

/** The store's pseudo-group where the relay keeps Azure's own records of the fleet's events (no member may name it). */
export const AZURE_GROUP = 'se-bridge-azure';

/** How long a member not healthy counts against its group unless `fleet.unhealthyCountsForSeconds` says otherwise: an hour. */
export const UNHEALTHY_COUNTS_FOR_SECONDS = 3600;
/** What is added to a holder's recorded end unless `fleet.marginSeconds` says otherwise: half an hour. */
export const MARGIN_SECONDS = 1800;

/** A group's name: what a member may configure, and so the only folders of a store the relay reads as groups. */
export const GROUP_NAME = /^[a-z0-9]([-a-z0-9]{0,50}[a-z0-9])?$/;

export const FleetConfig = z
  .strictObject({
    group: z
      .string()
      .regex(GROUP_NAME, 'must be 1 to 52 lower-case letters, digits and dashes (not at either end)')
      .refine((g) => g !== AZURE_GROUP, `is reserved: the relay keeps Azure's own records of the fleet's events under ${AZURE_GROUP}`)
      .describe('The group: every member that names it shares one budget, and the fleet view lists it by this name.'),
    maxUnavailable: MaxUnavailable.optional().describe(
      'How many members of the group may be unavailable at once because of an early approval (the slots): a number, or a percentage of the members with a fresh record ("30%" of 5 members: 2), rounded up as a Kubernetes PodDisruptionBudget rounds it, at least 1. Without it the VM is a member of the fleet view only: it writes its record, and nothing holds its approvals.',
    ),
    store: FleetStoreConfig.describe("Where the group's slots and member records live; every member points at the same one."),
    marginSeconds: z
      .number()
      .int()
      .min(5)
      .max(7 * 86400)
      .default(MARGIN_SECONDS)
      .describe(
        "Added to a holder's recorded end (NotBefore + DurationInSeconds): a slot whose holder stopped renewing is taken over only after it. At least three heartbeats.",
      ),
    heartbeatSeconds: HeartbeatSeconds.default(30).describe(
      'How often a member writes its record (events, slot, heartbeat) and reads its slot back; each period varied by up to a fifth either way, so members started together drift apart. A held slot is renewed at the IMDS reads, at most once a heartbeat.',
    ),
    storeTimeoutMs: storeTimeoutMs(
      'How long one call to the store may take: past it the request is aborted and the operation fails (the budget fails closed and says so; a forced approval goes on, on the record).',
    ),
    zones: z
      .enum(['one-at-a-time'])
      .optional()
      .describe(
        'one-at-a-time: an early approval never takes a member down while a member of another availability zone is in maintenance (the zone from instance metadata).',
      ),
    calendar: CalendarConfig.optional().describe(
      "The group's calendar (as `calendar`, shared by every member that names the group): each member's record says what it says now, and fleet status shows it.",
    ),
    health: HealthConfig.optional().describe(
      "When this member is whole again, and whether it is now: its slot is kept until it has been healthy for settleSeconds after its maintenance, and an unhealthy member counts against the group's budget.",
    ),
    unhealthyCountsForSeconds: z
      .number()
      .int()
      .min(60)
      .max(30 * 86400)
      .default(UNHEALTHY_COUNTS_FOR_SECONDS)
      .describe(
        "How long a member that is not healthy (its checks fail, or its record went stale while it checks its health) counts against the group's budget, from when it stopped being healthy or stopped writing. Past it, it no longer counts: it is left out and named (FLEET_MEMBER_IGNORED in the log, fleet status, the relay's read API), so a VM scaled in or a check that never passes cannot hold the group for good. A member down for its own maintenance counts until its slot's recorded end and settle time, whatever this says.",
      ),
    forgetAfterSeconds: z
      .number()
      .int()
      .min(3600)
      .max(365 * 86400)
      .default(7 * 86400)
      .describe(
        "A member whose record has not been written for this long (and for three of its heartbeats) is forgotten: the group's members with a budget delete its record as they heartbeat, a few at a time, each delete conditional on the version read, never one that holds a slot. At least unhealthyCountsForSeconds. se-bridge fleet forget removes one at once.",
      ),
    rate: RateConfig.optional(),
    unhealthyMembers: z
      .enum(['ifHealthyBudget', 'alwaysAllow'])
      .default('ifHealthyBudget')
      .describe(
        "What a member not healthy needs for its own early approval, as a PodDisruptionBudget's unhealthyPodEvictionPolicy: ifHealthyBudget, a slot like any member (it counts once, by the slot it takes); alwaysAllow, none while the group counts it as unavailable for its health (its checks fail, within unhealthyCountsForSeconds): it is down already, so its maintenance takes nothing more down. Needs health.",
      ),
    retryMs: z
      .number()
      .int()
      .min(200)
      .max(300_000)
      .default(2000)
      .describe(
        "How often an approval held by the budget (policy, hooks) looks at the slots again while it stands just behind the head of the group's queue; at the head it looks at every IMDS read (over Leases, it watches the slots and looks when one is given back, and every retryMs at least), further back less often.",
      ),
    breaker: z
      .strictObject({
        failures: z
          .number()
          .int()
          .min(1)
          .max(100)
          .describe('How many members approved early and not back within their bound open the breaker (within withinSeconds).'),
        withinSeconds: z
          .number()
          .int()
          .min(10)
          .max(30 * 86400)
          .describe("The window the failures are counted in, each dated by its slot's recorded end."),
      })
      .optional()
      .describe(
        "The group's circuit breaker: a member approved early whose slot passes its recorded end (marginSeconds past its maintenance) before it gives it back, whole again (healthy by its checks, with health), or that gives it back still not healthy at health.timeoutSeconds, counts as a failure; at `failures` within `withinSeconds` the group pauses itself (FLEET_BREAKER_OPEN, the members named), until a person resumes it (se-bridge fleet resume).",
      ),
  })
  .superRefine((f, ctx) => {
    // a brake of the budget without a budget would brake nothing
    const brakes = [...(f.rate ? ['rate'] : []), ...(f.unhealthyMembers === 'alwaysAllow' ? ['unhealthyMembers'] : [])];
    for (const key of brakes)
      if (f.maxUnavailable === undefined)
        ctx.addIssue({ code: 'custom', path: [key], message: 'needs maxUnavailable: without a budget nothing holds an approval' });
    if (f.unhealthyMembers === 'alwaysAllow' && f.health === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['unhealthyMembers'],
        message: 'alwaysAllow needs health: a member that does not check its health never knows it is not healthy',
      });
    // a record forgotten sooner would leave the count before its bound
    if (f.forgetAfterSeconds < f.unhealthyCountsForSeconds)
      ctx.addIssue({
        code: 'custom',
        path: ['forgetAfterSeconds'],
        message: `must be at least unhealthyCountsForSeconds (${f.unhealthyCountsForSeconds}): a member's record is forgotten only once it no longer counts`,
      });
    // a living holder renews its slot at its IMDS reads; one that cannot (rebooting, or its store slow) must not lose it within a few heartbeats
    if (f.marginSeconds < 3 * f.heartbeatSeconds)
      ctx.addIssue({
        code: 'custom',
        path: ['marginSeconds'],
        message: `must be at least three heartbeats (3 × heartbeatSeconds = ${3 * f.heartbeatSeconds}): a shorter margin lets a living holder's slot be taken over`,
      });
  });
export type FleetConfig = z.infer<typeof FleetConfig>;
/** A fleet block with a budget (`maxUnavailable`). */
export type BudgetConfig = FleetConfig & { readonly maxUnavailable: number | string };
export const budgeted = (f: FleetConfig): f is BudgetConfig => f.maxUnavailable !== undefined;
/** asBudget: the fleet block as a budget's, or an error when it has none. */
export function asBudget(f: FleetConfig): BudgetConfig {
  if (!budgeted(f)) throw new Error(`fleet group ${f.group} has no budget (maxUnavailable)`);
  return f;
}

/**
 * slotsFor: how many members may be unavailable at once: `maxUnavailable` itself, or its
 * percentage of the members with a fresh record, rounded up as a Kubernetes PodDisruptionBudget
 * and Karpenter round it ("30%" of 5 members is 2, "20%" of 11 is 3), at least 1, at most 100.
 */
export function slotsFor(maxUnavailable: number | string, liveMembers: number): number {
  if (typeof maxUnavailable === 'number') return maxUnavailable;
  const pct = Number.parseInt(maxUnavailable, 10);
  // whole numbers throughout: ⌈pct × members / 100⌉
  return Math.min(100, Math.max(1, Math.floor((pct * liveMembers + 99) / 100)));
}

/**
 * countedText: how a percentage came to its slots, as `fleet status` says it ("30 % of 5 members =
 * 2"); null for a number, which needs no counting.
 */
export function countedText(maxUnavailable: number | string, liveMembers: number): string | null {
  if (typeof maxUnavailable === 'number') return null;
  const pct = Number.parseInt(maxUnavailable, 10);
  const k = slotsFor(maxUnavailable, liveMembers);
  const exact = (pct * liveMembers) / 100;
  const bound = k === 100 && exact > 100 ? ' (at most 100)' : '';
  return `${pct} % of ${liveMembers} member${liveMembers === 1 ? '' : 's'} = ${k}${bound}`;
}

/** percentageText: how a percentage will be counted, as `validate` says it (it cannot know the members). */
export function percentageText(maxUnavailable: string): string {
  const pct = Number.parseInt(maxUnavailable, 10);
  const eg = [5, 11].map((n) => countedText(maxUnavailable, n)).join(', ');
  return `${pct} % of the members with a fresh record, rounded up, at least 1 (${eg})`;
}

/** budgetText: the group's budget as `validate` says it (how a percentage will count, the rate, unhealthy members), or null without one. */
export function budgetText(f: FleetConfig): string | null {
  if (!budgeted(f)) return null;
  const k = f.maxUnavailable;
  const slots =
    typeof k === 'number'
      ? `at most ${k} member${k === 1 ? '' : 's'} down at once by an early approval`
      : `maxUnavailable "${k}" is counted at each early approval as ${percentageText(k)}`;
  const rate = f.rate
    ? `; at most ${f.rate.approvals} early approval${f.rate.approvals === 1 ? '' : 's'} in any ${f.rate.perSeconds} s`
    : '';
  const first = f.unhealthyMembers === 'alwaysAllow' ? '; a member not healthy takes its own maintenance without a slot' : '';
  return `fleet group ${f.group}: ${slots}${rate}${first}`;
}
