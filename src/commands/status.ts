/**
 * se-bridge status: one IMDS read (transient failures retried briefly; 410 for up to the
 * documented 70 s), then the current events with the time left until NotBefore, and who this
 * VM is; with a calendar, whether early approval is open now and until when; with health checks, what they find now (run once).
 * What holds an approval not given is said where "not approved" would be: the calendar, or the
 * fleet budget (the slots' holders, members not healthy, the queue). `--json` prints the same for scripts.
 */
import { ImdsClient } from '../imds/client.ts';
import { ImdsError } from '../imds/errors.ts';
import { retryImds } from '../imds/retry.ts';
import { affects, identityFrom, isLeader } from '../imds/identity.ts';
import type { EventsDocument, ScheduledEvent } from '../imds/wire.ts';
import { existsSync } from 'node:fs';
import { humanDuration } from '../present/text-line.ts';
import { Store, type ApprovalRecord } from '../store/store.ts';
import type { SinkConfig } from '../config/schema.ts';
import { calendarOf, healthOf } from '../config/cross.ts';
import { Calendar, calendarNow, calendarNowText, type Within } from '../calendar/calendar.ts';
import { decide, type Rule } from '../approval/policy.ts';
import type { HealthConfig } from '../health/config.ts';
import { HealthMonitor } from '../health/monitor.ts';
import { pino } from 'pino';
import { Preparations, preparersOf } from '../daemon/preparations.ts';
import type { HealthState, PreparationState } from '../sinks/contract.ts';
import { readGroup } from '../fleet/budget/group.ts';
import { groupText, heldText, pausedText } from '../fleet/budget/group-text.ts';
import { errorFields } from '../lib/errors.ts';
import { CONFIG_OPTIONS, EXIT, loadOrReport, needs, parse, table } from './common.ts';
import { controlCall } from '../control/client.ts';
import type { DrillState } from '../drill/drills.ts';

/** status retries transient failures for 15 s (410 for the documented 70 s), pausing at most 5 s. */
const READ_RETRY = { intervalMs: 500, maxPauseMs: 5000, deadlineMs: 15_000 };

export async function main(argv: string[]): Promise<number> {
  const { values } = parse(argv, { ...CONFIG_OPTIONS, json: { type: 'boolean' } });
  // what it reads: the sinks' secrets and the approval server's are left unresolved
  const loaded = await loadOrReport(values, needs.sections('imds', 'state', 'identity', 'calendar', 'health', 'fleet'));
  if (loaded === null) return EXIT.usage;
  const { config } = loaded;
  const client = new ImdsClient({
    endpoint: config.imds.endpoint,
    requestTimeoutMs: config.imds.requestTimeoutMs,
    firstRequestTimeoutMs: config.imds.firstRequestTimeoutMs,
  });
  try {
    const compute = await client.getInstanceCompute().catch(() => null);
    const i = config.identity;
    const vm = identityFrom(compute, { name: i.vmName, resourceId: i.resourceId });
    let document: EventsDocument;
    try {
      document = await readWithRetry(client);
    } catch (err) {
      const e = err as ImdsError;
      process.stderr.write(`se-bridge status: ${e.code ?? 'ERROR'}: ${e.message}\n`);
      return EXIT.failure;
    }
    const now = Date.now();
    const { approvals, preparations } = readState(config.state.path, document.events, config.sinks, vm.name);
    const fleet =
      config.fleet === undefined ? undefined : await readGroup(config.fleet).catch((err: unknown) => ({ error: errorFields(err) }));
    const cal = calendarOf(config) === undefined ? null : new Calendar(calendarOf(config)!);
    // what holds an approval is said where "not approved" would be: the calendar now, else the fleet budget when it held it
    const heldOf = (e: ScheduledEvent): string | null => {
      const byCalendar = cal === null ? null : calendarHold(cal, e, config.approval.rules, vm.name, now);
      if (byCalendar !== null || fleet === undefined || 'error' in fleet) return byCalendar;
      const held = fleet.members
        .find((m) => m.vm.toLowerCase() === vm.name.toLowerCase())
        ?.events.find((x) => x.eventId === e.eventId)?.held;
      if (held === undefined) return null;
      // a pause holds it whatever else would: said first
      return fleet.pause === null ? heldText(held) : `${pausedText(fleet.group, fleet.pause)} ${heldText(held)}`;
    };
    const events = document.events.map((e) => ({
      eventId: e.eventId,
      eventType: e.eventType,
      eventStatus: e.eventStatus,
      eventSource: e.eventSource,
      resources: e.resources,
      affectsThisVm: affects(e.resources, vm.name),
      thisVmIsLeader: isLeader(e.resources, vm.name),
      notBefore: e.notBefore,
      secondsToNotBefore: e.notBefore === null ? null : Math.round((Date.parse(e.notBefore) - now) / 1000),
      durationInSeconds: e.durationInSeconds,
      description: e.description,
      approval: approvals.get(e.eventId) ?? null,
      held: e.eventStatus === 'Scheduled' && approvals.get(e.eventId) === undefined ? heldOf(e) : null,
      preparations: preparations.get(e.eventId) ?? [],
    }));
    const drill = await drillNow(config.state.path);
    const health = await checkOnce(healthOf(config), vm.resourceId);
    const calendar = cal === null ? null : calendarNow(cal, now);
    if (values.json) {
      const more = {
        ...(fleet === undefined ? {} : { fleet }),
        ...(drill === null ? {} : { drill }),
        ...(health === null ? {} : { health }),
      };
      process.stdout.write(`${JSON.stringify({ vm, documentIncarnation: document.incarnation, events, ...more }, null, 2)}\n`);
      return EXIT.ok;
    }
    process.stdout.write(`VM ${vm.name}${vm.resourceId ? ` (${vm.resourceId})` : ''}; identity from ${vm.origin}\n`);
    process.stdout.write(`DocumentIncarnation ${document.incarnation}; ${events.length} event${events.length === 1 ? '' : 's'}\n`);
    if (events.length > 0) {
      const rows = events.map((e) => [
        e.eventType,
        e.eventStatus,
        e.resources.map((r) => (r.toLowerCase() === vm.name.toLowerCase() ? `${r}*` : r)).join(','),
        e.notBefore ?? '-',
        e.secondsToNotBefore === null
          ? '-'
          : e.secondsToNotBefore >= 0
            ? `in ${humanDuration(e.secondsToNotBefore * 1000)}`
            : `${humanDuration(-e.secondsToNotBefore * 1000)} ago`,
        e.durationInSeconds < 0 ? 'unknown' : `${e.durationInSeconds}s`,
        e.eventSource,
        e.approval ? `approved by ${e.approval.by} (${e.approval.via})` : e.eventStatus === 'Scheduled' ? (e.held ?? 'not approved') : '-',
        e.eventId,
      ]);
      process.stdout.write(
        `\n${table(['TYPE', 'STATUS', 'VMS (* = this VM)', 'NOT BEFORE', 'TIME LEFT', 'DURATION', 'SOURCE', 'APPROVAL', 'EVENT ID'], rows)}\n`,
      );
      const prepared = events.flatMap((e) => e.preparations.map((p) => [e.eventId, p.sink, p.state, p.at ?? '-', p.detail ?? '-']));
      if (prepared.length > 0)
        process.stdout.write(`\nPreparations\n${table(['EVENT ID', 'SINK', 'STATE', 'SINCE', 'DETAIL'], prepared)}\n`);
    }
    if (drill !== null)
      process.stdout.write(
        `\nDRILL: ${drill.eventId}, a ${drill.request.type} played by the daemon (not listed by IMDS), ${drill.ended ?? (drill.startedAt === null ? 'Scheduled' : 'Started')}; preparations ${drill.request.prepare === 'real' ? 'for real' : 'rehearsed'}\n`,
      );
    if (calendar !== null) process.stdout.write(`\nCalendar (${calendar.timeZone}): early approval ${calendarNowText(calendar)}\n`);
    if (health !== null) process.stdout.write(`\nHealth checks: ${health.healthy ? 'pass' : `do not pass: ${health.detail ?? ''}`}\n`);
    if (fleet !== undefined)
      process.stdout.write(
        `\n${'error' in fleet ? `Fleet budget: the store cannot be read (${fleet.error.code}: ${fleet.error.err}): no early approval until it answers\n` : groupText(fleet, table)}`,
      );
    return EXIT.ok;
  } finally {
    await client.close();
  }
}

/**
 * calendarHold: how the calendar holds the early approval of `e` now, in words, or null when it
 * does not: a blackout holds every one (a person's too, unless forced); outside the windows, a
 * rule bound `within: windows` waits for the next.
 */
function calendarHold(cal: Calendar, e: ScheduledEvent, rules: readonly Rule[], vmName: string, now: number): string | null {
  const d = decide(rules, e, vmName, now);
  const within: Within = (d.action === 'approve' || d.action === 'approveAfterHooks') && d.rule !== null ? rules[d.rule]!.within : 'any';
  if (cal.allows(now, within)) return null;
  const notBefore = e.notBefore === null ? undefined : Date.parse(e.notBefore);
  const opens = cal.nextAllowed(now, within, notBefore);
  const next = opens === null ? 'none before NotBefore' : `until ${new Date(opens).toISOString()}`;
  const state = cal.stateAt(now);
  if (state.blackout !== null)
    return `held by the calendar (inside the blackout ${state.blackout}, ${next}; only a forced approval goes through)`;
  return `held by the calendar (outside the maintenance windows, ${next}; the rule ${d.reason} waits for a window)`;
}

/** checkOnce runs this VM's health checks once (each with its deadline), or says null without a health block. */
async function checkOnce(config: HealthConfig | undefined, resourceId: string | null): Promise<HealthState | null> {
  if (config === undefined) return null;
  const monitor = new HealthMonitor(config, pino({ level: 'silent' }), Date.now, () => resourceId);
  try {
    return await monitor.check();
  } finally {
    monitor.close();
  }
}

/** drillNow: the drill the running daemon plays or played last, asked over its control channel, or null. */
async function drillNow(statePath: string): Promise<DrillState | null> {
  const r = await controlCall(statePath, 'GET', '/v1/drills/current', undefined, 2000).catch(() => null);
  return r?.status === 200 ? (r.body as { drill: DrillState }).drill : null;
}

async function readWithRetry(client: ImdsClient): Promise<EventsDocument> {
  return retryImds(async () => {
    const read = await client.getScheduledEvents();
    if (read.kind === 'document') return read.document;
    throw new ImdsError('IMDS_HTTP_STATUS', 'IMDS answered 304 to a request without If-None-Match');
  }, READ_RETRY);
}

/** readState reads the approval records and preparation states of the daemon's state, when there is one to read. */
function readState(
  path: string,
  events: EventsDocument['events'],
  sinks: readonly SinkConfig[],
  vmName: string,
): { approvals: Map<string, Pick<ApprovalRecord, 'by' | 'via' | 'at'>>; preparations: Map<string, PreparationState[]> } {
  const approvals = new Map<string, Pick<ApprovalRecord, 'by' | 'via' | 'at'>>();
  const preparations = new Map<string, PreparationState[]>();
  if (!existsSync(path)) return { approvals, preparations };
  let store: Store | null = null;
  try {
    store = Store.open(path);
    const preps = new Preparations(store.preparations, preparersOf(sinks));
    for (const e of events) {
      const a = store.approvals.of(e.eventId);
      if (a !== null) approvals.set(e.eventId, { by: a.by, via: a.via, at: a.at });
      const p = preps.states(e, vmName);
      if (p.length > 0) preparations.set(e.eventId, p);
    }
  } catch {
    /* unreadable state: show the events without approval or preparation state */
  } finally {
    store?.close();
  }
  return { approvals, preparations };
}
