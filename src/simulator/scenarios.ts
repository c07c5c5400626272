/**
 * The simulator's scenarios: the maintenance situations the documentation describes, with
 * their real notice periods and durations. Times are in real seconds; development timing
 * divides them by 60 (with a floor, so each state lasts long enough to be polled).
 */

/** Who a resource entry names: this VM, a peer of its availability set, or a fixed name. */
export type ResourceRef = 'self' | 'peer' | 'other' | { name: string };

export interface ScenarioEventSpec {
  type: 'Freeze' | 'Reboot' | 'Redeploy' | 'Preempt' | 'Terminate';
  source: 'Platform' | 'User';
  resources: ResourceRef[];
  /** Notice before NotBefore, in real seconds. */
  noticeSec: number;
  /** DurationInSeconds as IMDS reports it (-1: unknown). */
  durationSeconds: number;
  /** How long the event stays Started before it disappears, in real seconds. */
  startedSec: number;
  description: string;
  /** The event appears already Started (a host failure skips Scheduled). */
  appearsStarted?: boolean;
  /** Azure cancels the event this long after it appeared (real seconds). */
  cancelAfterSec?: number;
  /** Azure moves NotBefore this long after the event appeared (real seconds)... */
  rescheduleAfterSec?: number;
  /** ...to this far ahead of that moment (real seconds). */
  rescheduleNoticeSec?: number;
  /** NotBefore format: RFC 1123 as documented, or ISO 8601 as Microsoft's mock server emits. */
  notBeforeFormat?: 'rfc1123' | 'iso8601';
  /** A new EventId when the event starts, as Microsoft's mock server (scheduled-events-mock-server) does. */
  newIdPerState?: boolean;
}

export interface Scenario {
  name: string;
  title: string;
  events: ScenarioEventSpec[];
}

const LIVE_MIGRATION = 'Virtual machine is being paused because of a memory-preserving Live Migration operation.';

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'live-migration',
    title: 'Live migration: Freeze of 5 s for two VMs',
    events: [
      {
        type: 'Freeze',
        source: 'Platform',
        resources: ['self', 'peer'],
        noticeSec: 900,
        durationSeconds: 5,
        startedSec: 600,
        description: LIVE_MIGRATION,
      },
    ],
  },
  {
    name: 'host-maintenance',
    title: 'Memory-preserving host update: Freeze of 9 s',
    events: [
      {
        type: 'Freeze',
        source: 'Platform',
        resources: ['self'],
        noticeSec: 900,
        durationSeconds: 9,
        startedSec: 300,
        description: 'Host server is undergoing memory-preserving maintenance.',
        notBeforeFormat: 'iso8601',
      },
    ],
  },
  {
    name: 'user-reboot',
    title: 'Reboot requested by an administrator',
    events: [
      { type: 'Reboot', source: 'User', resources: ['self'], noticeSec: 900, durationSeconds: -1, startedSec: 180, description: '' },
    ],
  },
  {
    name: 'platform-redeploy',
    title: 'Platform redeploy to another host',
    events: [
      {
        type: 'Redeploy',
        source: 'Platform',
        resources: ['self'],
        noticeSec: 600,
        durationSeconds: -1,
        startedSec: 420,
        description: 'Virtual machine is being redeployed to a different host due to platform maintenance.',
      },
    ],
  },
  {
    name: 'user-redeploy',
    title: 'Redeploy requested by an administrator',
    events: [
      { type: 'Redeploy', source: 'User', resources: ['self'], noticeSec: 600, durationSeconds: -1, startedSec: 420, description: '' },
    ],
  },
  {
    name: 'spot-preempt',
    title: 'Spot eviction with 30 s notice',
    events: [
      {
        type: 'Preempt',
        source: 'Platform',
        resources: ['self'],
        noticeSec: 30,
        durationSeconds: -1,
        startedSec: 120,
        description: 'Spot virtual machine is being evicted.',
        notBeforeFormat: 'iso8601',
      },
    ],
  },
  {
    name: 'scaleset-terminate',
    title: 'Scale set instance scheduled for deletion',
    events: [
      {
        type: 'Terminate',
        source: 'User',
        resources: ['self'],
        noticeSec: 300,
        durationSeconds: -1,
        startedSec: 120,
        description: 'Virtual machine scale set instance is being deleted.',
      },
    ],
  },
  {
    name: 'canceled-maintenance',
    title: 'Reboot scheduled, then canceled by Azure',
    events: [
      {
        type: 'Reboot',
        source: 'Platform',
        resources: ['self'],
        noticeSec: 900,
        durationSeconds: -1,
        startedSec: 300,
        cancelAfterSec: 360,
        description: 'Virtual machine is going to be restarted as requested by platform maintenance.',
      },
    ],
  },
  {
    name: 'host-failure',
    title: 'Host failure: Reboot appears already Started',
    events: [
      {
        type: 'Reboot',
        source: 'Platform',
        resources: ['self'],
        noticeSec: 0,
        durationSeconds: -1,
        startedSec: 300,
        appearsStarted: true,
        description: 'Virtual machine is being restarted due to an unexpected host failure.',
      },
    ],
  },
  {
    name: 'degraded-hardware',
    title: 'Degraded hardware predicted to fail: Redeploy days ahead, then brought forward',
    events: [
      {
        type: 'Redeploy',
        source: 'Platform',
        resources: ['self'],
        noticeSec: 3 * 86400,
        durationSeconds: -1,
        startedSec: 600,
        rescheduleAfterSec: 900,
        rescheduleNoticeSec: 86400,
        description: 'Virtual machine is being redeployed because the host hardware is predicted to fail.',
      },
    ],
  },
  {
    name: 'group-not-first',
    title: 'Freeze for several VMs, this one not the first',
    events: [
      {
        type: 'Freeze',
        source: 'Platform',
        resources: ['peer', 'self', 'other'],
        noticeSec: 900,
        durationSeconds: 5,
        startedSec: 600,
        description: LIVE_MIGRATION,
      },
    ],
  },
  {
    name: 'new-id-per-state',
    title: "Microsoft's mock server: the event gets a new EventId when it starts",
    events: [
      {
        type: 'Reboot',
        source: 'Platform',
        resources: ['self'],
        noticeSec: 900,
        durationSeconds: -1,
        startedSec: 300,
        newIdPerState: true,
        notBeforeFormat: 'iso8601',
        description: 'Virtual machine is going to be restarted as requested by platform maintenance.',
      },
    ],
  },
  {
    name: 'drain-then-approve',
    title: 'Freeze of 30 s: the load balancer probe drains, then the bridge approves',
    events: [
      {
        type: 'Freeze',
        source: 'Platform',
        resources: ['self'],
        noticeSec: 900,
        durationSeconds: 30,
        startedSec: 300,
        description: 'Host server is undergoing memory-preserving maintenance.',
      },
    ],
  },
  {
    name: 'other-vm-only',
    title: 'Reboot of another VM of the availability set only',
    events: [
      { type: 'Reboot', source: 'Platform', resources: ['other'], noticeSec: 900, durationSeconds: -1, startedSec: 300, description: '' },
    ],
  },
];

const TIMING_FACTOR = { dev: 1 / 60, real: 1 } as const;
export type Timing = keyof typeof TIMING_FACTOR;

/** Shortest time any state lasts under development timing, so a 1 s poller sees it. */
const DEV_FLOOR_MS = 2500;

/** scaled turns real seconds into milliseconds under `timing`. */
export function scaled(seconds: number, timing: Timing): number {
  if (timing === 'real') return seconds * 1000;
  if (seconds <= 0) return 0;
  return Math.max(DEV_FLOOR_MS, Math.round(seconds * 1000 * TIMING_FACTOR.dev));
}

export function findScenario(name: string): Scenario | undefined {
  return SCENARIOS.find((s) => s.name === name);
}
