/**
 * se-bridge template test --config FILE --sink NAME [--scenario NAME]: renders a webhook sink's
 * templates for every transition of a simulator scenario (played on a clock of its own, so it
 * takes no time) and prints each request the receiver would get: method, URL, headers, body,
 * or that the template skips the event, or why it fails on it. Nothing is sent. Exit 0 when
 * every transition renders, 1 when one fails, 2 on a usage or configuration problem.
 */
import { linksFor } from '../approval/links.ts';
import { inboxSession } from '../fleet/inbox/config.ts';
import { identityFrom } from '../imds/identity.ts';
import { transitionOf, type BridgeEvent } from '../pipeline/cloudevent.ts';
import { matchesFilter, type FilterConfig } from '../pipeline/filter.ts';
import { previewOf } from '../registry/sinks.ts';
import { findScenario, SCENARIOS } from '../simulator/scenarios.ts';
import { scenarioTimeline } from '../simulator/timeline.ts';
import { CONFIG_OPTIONS, EXIT, loadOrReport, needs, parse, UsageError } from './common.ts';
import { identityOverride, type BridgeConfig } from '../config/schema.ts';
import { BridgeState } from '../imds/view.ts';

/** A scenario with a scheduled, an updated, an approved, a started and a completed. */
const DEFAULT_SCENARIO = 'degraded-hardware';

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { ...CONFIG_OPTIONS, sink: { type: 'string' }, scenario: { type: 'string' } }, true);
  if (positionals[0] !== 'test' || positionals.length !== 1) throw new UsageError('the only sub-command is "test"');
  if (values.sink === undefined) throw new UsageError('--sink NAME is required');
  const scenario = values.scenario ?? DEFAULT_SCENARIO;
  if (findScenario(scenario) === undefined)
    throw new UsageError(`unknown scenario "${scenario}"; one of ${SCENARIOS.map((s) => s.name).join(', ')}`);
  const loaded = await loadOrReport(
    values,
    needs.sinks((s) => s.name === values.sink, 'approval', 'identity'),
  );
  if (loaded === null) return EXIT.usage;
  const { config } = loaded;
  const sink = config.sinks.find((s) => s.name === values.sink);
  if (sink === undefined)
    throw new UsageError(`no sink is named "${values.sink}"; the sinks are ${config.sinks.map((s) => s.name).join(', ')}`);
  if (sink.type !== 'webhook') throw new UsageError(`sink "${sink.name}" is a ${sink.type} sink; templates belong to webhook sinks`);
  const override = identityOverride(config.identity);
  const vm = identityFrom(null, { ...override, name: override.name ?? 'sim-vm-0' });
  const inbox = config.approval.inbox;
  const links = linksFor(config.approval, new BridgeState(vm), inbox === undefined ? undefined : () => inboxSession(inbox, vm));
  const preview = await previewOf(sink, links === undefined ? () => null : (e) => links.link(e));
  if (preview === null) throw new UsageError(`sink "${sink.name}" has no template, urlTemplate or headerTemplates`);

  const events = scenarioTimeline(scenario, vm);
  const out = process.stdout;
  out.write(
    `se-bridge template test: sink ${sink.name}, scenario ${scenario} (${findScenario(scenario)!.title}), VM ${vm.name}; nothing is sent\n`,
  );
  let failed = 0;
  let dropped = 0;
  for (const [n, e] of events.entries()) {
    out.write(`\n${n + 1}. ${transitionOf(e)}  ${e.data.eventType}  ${e.subject}  at ${e.time}\n`);
    const why = filterDrops(sink.filter, e, vm.name);
    if (why !== null) {
      dropped += 1;
      out.write(`   not sent: the sink's filter drops it (${why})\n`);
      continue;
    }
    const r = await preview(e);
    if ('outcome' in r) {
      if (r.outcome.status !== 'delivered') failed += 1;
      out.write(`   ${r.outcome.status === 'delivered' ? (r.outcome.detail ?? 'skipped') : `fails: ${r.outcome.reason}`}\n`);
      continue;
    }
    const headers = r.body === null ? r.headers : { 'content-type': r.contentType, ...r.headers };
    out.write(`   ${r.method} ${r.url}\n`);
    for (const [k, v] of Object.entries(headers)) out.write(`   ${k}: ${v}\n`);
    if (r.body !== null) out.write(`${indent(pretty(r.body, r.contentType))}\n`);
  }
  const sent = events.length - dropped;
  out.write(
    `\n${events.length} transition${events.length === 1 ? '' : 's'}, ${dropped} dropped by the filter; ` +
      `${failed === 0 ? `every one of the ${sent} sent rendered` : `${failed} of the ${sent} sent failed to render`}\n`,
  );
  return failed === 0 ? EXIT.ok : EXIT.failure;
}

/** filterDrops says why the sink's filter drops an event, or null when it takes it. */
function filterDrops(filter: FilterConfig, e: BridgeEvent, vmName: string): string | null {
  const d = e.data;
  const subject = { transition: transitionOf(e), eventType: d.eventType, eventSource: d.eventSource, resources: d.resources };
  if (matchesFilter(filter, subject, vmName)) return null;
  if (filter.types !== undefined && !(filter.types as readonly string[]).includes(subject.transition))
    return `types: ${filter.types.join(', ')}`;
  if (filter.eventTypes !== undefined && !(filter.eventTypes as readonly string[]).includes(d.eventType))
    return `eventTypes: ${filter.eventTypes.join(', ')}`;
  if (filter.eventSources !== undefined && !(filter.eventSources as readonly string[]).includes(d.eventSource))
    return `eventSources: ${filter.eventSources.join(', ')}`;
  return `scope: ${filter.scope}`;
}

/**
 * templateLimitProblems renders every webhook template on the sample events of every simulator
 * scenario and reports each that runs past a limit (time, memory, size), by its key: such a
 * template would have every one of those events dead-lettered.
 */
export async function templateLimitProblems(config: BridgeConfig): Promise<string[]> {
  const problems: string[] = [];
  const vm = identityFrom(null, { ...identityOverride(config.identity), name: identityOverride(config.identity).name ?? 'sim-vm-0' });
  let samples: (readonly [string, BridgeEvent[]])[] | null = null;
  for (const [i, sink] of config.sinks.entries()) {
    const preview = await previewOf(sink, () => 'https://bridge.example.com/v1/approve?token=sample');
    if (preview === null) continue;
    samples ??= SCENARIOS.map((s) => [s.name, scenarioTimeline(s.name, vm)] as const);
    search: for (const [scenario, events] of samples) {
      for (const e of events) {
        const r = await preview(e);
        if (!('outcome' in r) || r.limit === undefined) continue;
        problems.push(`sinks[${i}].${r.limit.key}: ${r.limit.message} (on the sample ${transitionOf(e)} event of scenario ${scenario})`);
        break search;
      }
    }
  }
  return problems;
}

function pretty(body: string, contentType: string): string {
  if (!/json/i.test(contentType)) return body;
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

const indent = (text: string) =>
  text
    .split('\n')
    .map((l) => `   ${l}`)
    .join('\n');
