/**
 * npm run bench [-- --quick]: every figure of docs/performance.md, measured
 * against the project's IMDS simulator and local peers on 127.0.0.1, side by side with the
 * upstream reference algorithm. Writes bench/results.json, bench/results.md and
 * docs/latency.svg. Prints figures; never fails on a time.
 *
 *   A. change-to-delivery latency at poll intervals 1000/500/200 ms and for the reference
 *      poller, all running at once, each against its own simulator and webhook peer;
 *   B. footprint over 60 s (RSS, CPU share, IMDS request rate, start-up to the first poll) of
 *      the package (webhook+file, stdout+file, every sink type), the single executable, the
 *      steps between the sources and the package, and three anchors (bare node, the Python
 *      sample, the reference poller), all at once;
 *   C. approval round trip: signed POST /v1/approvals to StartRequests at the simulator, directly
 *      and through the relay and the Service Bus stand-in (fleet approvals); C3, a burst of 100
 *      approvals at once through one relay to 100 bridges in other processes (bench/burst.ts);
 *   D. fan-out: one document with 50 events to six sinks, and again beside a sink that never answers;
 *   E. throughput: 10,000 transitions through diff, store and dispatcher to a local webhook;
 *   T. payload templates: the webhook sink with and without the PagerDuty recipe's template;
 *   H. preparing the VM: scheduled to approved with a load balancer probe (drainSeconds 5) and
 *      with a Kubernetes drain of 50 pods on the stand-in API server; a Spot eviction (30 s of
 *      notice, 50 pods of 60 s grace): the node cordoned, every eviction accepted, the node empty;
 *   F. fleet budgets: a slot given back to the next held member's StartRequests with 10 and 50
 *      bridges in one group, over both stores; a daemon's memory with and without `fleet`;
 *  F2. what a fleet budget costs its store per member, idle and in a wave, at 10, 100 and 300
 *      members (bench/fleet-cost.ts), and what a paused group and the circuit breaker cost beside it
 *      at 10 and 100 (bench/fleet-brakes.ts); F3. one group across 20 and 100 bridges as processes, 2 and 10 slots
 *      (bench/fleet-processes.ts), and a wave's collision words and store cost at 20 and 100 (bench/fleet-wave.ts).
 *   M. memory of each profile alone (package webhook+file, with a Blob or a Lease budget, the AKS
 *      DaemonSet, the executable read back from disk) beside bare node: VmRSS, RssAnon, RssFile, PSS,
 *      each configured in YAML at log level info, at its first start and with a warm compile cache;
 *   V. the fleet view: an event at a VM to its place in the relay's GET /v1/fleet/events, the
 *      store's requests per relay request, the relay's memory, at 20 and 100 members (bench/fleet-view.ts).
 *   C. the fleet console in headless Chromium, 100 members and 1,000 pending events: the first
 *      load's bytes and time to every bar placed, a live update to the open page (bench/console.ts).
 *   D. the chat digest, three replicas over 10, 100 and 1,000 members for an hour of looks: the
 *      store's requests per replica per minute, the bytes a look lists, one message a period and
 *      one update a change (bench/digest.ts).
 */
import { execFileSync } from 'node:child_process';
import { rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { dir, dist, log, quick, ROOT } from './common.ts';
import { phaseApprovals, phaseFanout, phaseFleetApprovals, phaseIdentity, phaseOutage, phaseThroughput } from './inprocess.ts';
import { FOOTPRINTED, phaseFootprint, phaseLatency, phaseStartup } from './processes.ts';
import { svg } from './report.ts';
import { phasePreparation } from './prepare.ts';
import { phaseBurst } from './burst.ts';
import { phaseTemplates } from './templates.ts';
import { phaseBudget } from './budget.ts';
import { phaseFleetCost } from './fleet-cost.ts';
import { phaseFleetBrakes } from './fleet-brakes.ts';
import { phaseFleetProcesses } from './fleet-processes.ts';
import { phaseFleetWave } from './fleet-wave.ts';
import { phaseFleetView } from './fleet-view.ts';
import { phaseConsole } from './console.ts';
import { phaseDigest } from './digest.ts';
import { phaseMemory } from './memory.ts';

try {
  const machine = {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? '',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    quick,
  };
  // built first: an executable measured straight after it was written showed about 20 MiB more
  // resident than the same file minutes later (the footprint phase alone, run again: 87.8 then
  // 67.7 MiB), so the latency phase runs in between
  log('building the package (dist/) and the single executable');
  execFileSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-binary.ts')], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  log(`A: latency (${quick ? 25 : 75} s, four lanes at once)`);
  const latency = await phaseLatency();
  const binaryMiB = Math.round((statSync(join(ROOT, 'build', 'se-bridge-linux-x64')).size / 2 ** 20) * 10) / 10;
  log(`B: footprint (${quick ? 15 : 60} s, ${FOOTPRINTED.length} processes at once)`);
  const footprint = await phaseFootprint();
  log('B2: start-up, one process at a time');
  const startup = await phaseStartup(quick ? 3 : 7);
  log('M: memory of each profile, one process at a time (VmRSS, RssAnon, RssFile, PSS)');
  const memory = await phaseMemory();
  log('C: approval round trip');
  const approvals = await phaseApprovals();
  log('C2: fleet approval round trip (through the relay and Service Bus)');
  const fleet = await phaseFleetApprovals();
  log('C3: a burst of 100 fleet approvals at once through one relay (11 more processes)');
  const burst = await phaseBurst(100);
  log('D: fan-out');
  const fanout = await phaseFanout(false);
  const fanoutStuck = await phaseFanout(true);
  log('E: throughput');
  const throughput = await phaseThroughput();
  const outage = phaseOutage(10 * 60_000, quick ? 2000 : 20_000);
  log('G: managed identity (token endpoint, JWT over TLS)');
  const identity = await phaseIdentity();
  log('T: payload templates (the webhook sink with and without the PagerDuty recipe)');
  const templates = await phaseTemplates();
  log('H: preparing the VM (probe drain, Kubernetes drain of 50 pods)');
  const preparation = await phasePreparation();
  log('F: fleet budgets (10 and 50 bridges in one group, both stores; memory with and without a fleet)');
  const budget = await phaseBudget();
  log('F2: what a fleet budget costs its store (10, 100 and 300 members, both stores, a simulated clock)');
  const cost = await phaseFleetCost(quick ? [10, 100] : [10, 100, 300]);
  log('F2b: what a paused group and the circuit breaker cost the store (10 and 100 members, both stores, a simulated clock)');
  const brakes = await phaseFleetBrakes(quick ? [10] : [10, 100]);
  log('F3: a fleet budget across 20 and 100 bridges as processes (2 and 10 slots, every maintenance at once)');
  const processes = [];
  for (const [n, k] of quick
    ? [[20, 2]]
    : [
        [20, 2],
        [100, 10],
      ])
    processes.push(await phaseFleetProcesses(n, k));
  log("F3: a wave's collision across 20 and 100 bridges as processes (a tenth of the group as slots, every member due at once)");
  const waves = [];
  for (const n of quick ? [20] : [20, 100]) waves.push(await phaseFleetWave(n));
  log('V: the fleet view (20 and 100 bridges, the relay as a process, a reader 10 times a second)');
  const view = await phaseFleetView(quick ? [20] : [20, 100]);
  log('C: the fleet console (100 members, 1,000 pending events, headless Chromium)');
  const consoleRun = await phaseConsole(100, quick ? 200 : 1000);
  const digest = await phaseDigest(quick ? [10, 100] : [10, 100, 1000]);

  const strip = (d: ReturnType<typeof dist>) => ({
    n: d.n,
    p50: Math.round(d.p50),
    p90: Math.round(d.p90),
    p99: Math.round(d.p99),
    max: Math.round(d.max),
  });
  const results = {
    at: new Date().toISOString(),
    machine,
    changeToDeliveryMs: Object.fromEntries(Object.entries(latency).map(([k, v]) => [k, strip(v)])),
    footprint,
    startup,
    memory,
    binaryMiB,
    approvalRoundTripMs: strip(approvals),
    fleetApprovalRoundTripMs: { toStartRequests: strip(fleet.toStart), toRelayAnswer: strip(fleet.toAnswer) },
    fleetBurstMs: {
      n: burst.n,
      statuses: burst.statuses,
      answer: strip(burst.answer),
      toStartRequests: strip(burst.toStartRequests),
      answerAfterItsStartRequests: strip(burst.answerAfterStart),
    },
    fanoutMs: { alone: fanout, besideStuckSink: fanoutStuck },
    throughput,
    tenMinuteOutage: outage,
    identity,
    preparation,
    templates,
    fleetBudget: {
      runs: budget.runs.map((r) => ({ ...r, releaseToNextStart: strip(r.releaseToNextStart) })),
      rssMiB: budget.rssMiB,
      settle: {
        ...budget.settle,
        completedToRelease: strip(budget.settle.completedToRelease),
        releaseToNextStart: strip(budget.settle.releaseToNextStart),
      },
      storeCost: cost,
      brakesCost: brakes,
      processes: processes.map((p) => ({ ...p, releaseToNextStart: strip(p.releaseToNextStart) })),
      waves,
    },
    fleetView: view.map((v) => ({ ...v, toListedMs: strip(v.toListedMs) })),
    fleetConsole: {
      ...consoleRun,
      makeTimelineMs: strip(consoleRun.makeTimelineMs),
      firstLoadMs: strip(consoleRun.firstLoadMs),
      liveUpdateMs: strip(consoleRun.liveUpdateMs),
    },
    fleetDigest: digest.map((d) => ({ ...d, lookMs: strip(d.lookMs) })),
  };
  writeFileSync(join(ROOT, 'bench', 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(ROOT, 'docs', 'latency.svg'), svg(latency));

  const ref = results.changeToDeliveryMs.reference!;
  const ratio = (v: number, r: number) => (r > 0 ? `${(v / r).toFixed(2)}×` : '-');
  const refFp = footprint.find((f) => f.name === 'anchor: reference poller (node)')!;
  const md = [
    `Measured by \`npm run bench${quick ? ' -- --quick' : ''}\` on ${machine.cpus} cores (${machine.cpuModel}), ${machine.memoryGiB} GiB, Node ${machine.node}; everything on 127.0.0.1.`,
    '',
    '| IMDS change to webhook delivery | changes | p50 | p90 | p99 | max | p50 vs reference |',
    '|---|---|---|---|---|---|---|',
    ...Object.entries(results.changeToDeliveryMs).map(
      ([k, v]) =>
        `| ${k === 'reference' ? 'reference algorithm (sleep 1 s, compare incarnation)' : `se-bridge, ${k.replace('poll-', 'poll every ')}`} | ${v.n} | ${v.p50} ms | ${v.p90} ms | ${v.p99} ms | ${v.max} ms | ${ratio(v.p50, ref.p50)} |`,
    ),
    '',
    '| footprint over the measuring window | start-up to first poll | RSS | CPU | IMDS requests/s (max in any second) | RSS vs reference |',
    '|---|---|---|---|---|---|',
    ...footprint.map(
      (f) =>
        `| ${f.name} | ${f.startupToFirstPollMs === null ? '-' : `${f.startupToFirstPollMs} ms`} | ${f.rssMiB} MiB | ${f.cpuPercent} % | ${f.imdsRequestsPerSecond} (${f.imdsMaxInAnySecond}) | ${ratio(f.rssMiB, refFp.rssMiB)} |`,
    ),
    '',
    `The single executable (linux-x64) is ${binaryMiB} MiB. The start-up times above come from ${FOOTPRINTED.length} processes started at once on ${machine.cpus} cores; one at a time (median of ${quick ? 3 : 7}):`,
    '',
    '| start-up to the first Scheduled Events request, alone | median |',
    '|---|---|',
    ...startup.map((s) => `| ${s.name} | ${s.startupToFirstPollMs} ms |`),
    '',
    '| approval round trip: signed POST /v1/approvals until StartRequests reaches IMDS | approvals | p50 | p99 |',
    '|---|---|---|---|',
    `| direct, to the bridge's approval server | ${approvals.n} | ${Math.round(approvals.p50)} ms | ${Math.round(approvals.p99)} ms |`,
    `| fleet, to the relay, over Service Bus (the AMQP peer) to the bridge's inbox | ${fleet.toStart.n} | ${Math.round(fleet.toStart.p50)} ms | ${Math.round(fleet.toStart.p99)} ms |`,
    `| fleet, until the relay answers with the VM's outcome | ${fleet.toAnswer.n} | ${Math.round(fleet.toAnswer.p50)} ms | ${Math.round(fleet.toAnswer.p99)} ms |`,
    '',
    `| a burst: ${burst.n} approvals sent at once by one client to one relay, ${burst.n} bridges in ten processes (answers: ${Object.entries(
      burst.statuses,
    )
      .map(([k, v]) => `${v} × ${k}`)
      .join(', ')}) | p50 | p99 |`,
    '|---|---|---|',
    `| from the burst to each VM's StartRequests | ${Math.round(burst.toStartRequests.p50)} ms | ${Math.round(burst.toStartRequests.p99)} ms |`,
    `| from the burst to each answer | ${Math.round(burst.answer.p50)} ms | ${Math.round(burst.answer.p99)} ms |`,
    `| from its VM's StartRequests to each answer | ${Math.round(burst.answerAfterStart.p50)} ms | ${Math.round(burst.answerAfterStart.p99)} ms |`,
    '',
    '| 50 events in one document, until all 50 are delivered at each sink | webhook | file | Event Hubs | Service Bus | Slack | Teams | Event Grid |',
    '|---|---|---|---|---|---|---|---|',
    `| seven sinks | ${Object.values(fanout)
      .map((v) => `${v} ms`)
      .join(' | ')} |`,
    `| the same seven, beside an eighth that never answers | ${Object.values(fanoutStuck)
      .map((v) => `${v} ms`)
      .join(' | ')} |`,
    '',
    `| throughput: ${throughput.transitions} transitions through diff, store and dispatcher to a local webhook | committed ${throughput.committedPerSecond}/s | delivered ${throughput.deliveredPerSecond}/s | ${throughput.storeBytesPerEvent} store bytes per event |`,
    '|---|---|---|---|',
    '',
    `| webhook credential (${quick ? 500 : 2000} events, 10 per send) | first request | events/s after it | token requests |`,
    '|---|---|---|---|',
    ...identity.webhook.map((w) => `| ${w.name} | ${w.firstMs} ms | ${w.perSecond} | ${w.tokenRequests} |`),
    '',
    '| Event Hubs over TLS | create to first delivery | one send: p50 | p99 |',
    '|---|---|---|---|',
    ...identity.eventHubs.map((e) => `| ${e.name} | ${e.firstMs} ms | ${e.sendP50} ms | ${e.sendP99} ms |`),
    '',
    `| the webhook sink to a local peer, one request per event (${templates.events} events, 10 per send) | events/s |`,
    '|---|---|',
    `| CloudEvents binary mode | ${templates.plainPerSecond} |`,
    `| the PagerDuty recipe's template (examples/templates/pagerduty.yaml) | ${templates.templatePerSecond} |`,
    '',
    `| scheduled to approved (StartRequests), approveAfterHooks, poll every 1 s | rounds | each |`,
    '|---|---|---|',
    `| load balancer probe, drainSeconds 5 | ${preparation.probeDrain5sMs.length} | ${preparation.probeDrain5sMs.map((v) => `${(v / 1000).toFixed(1)} s`).join(', ')} |`,
    `| load balancer probe: the change at IMDS to the first 503 a prober sees (every 50 ms) | ${preparation.probeChangeTo503Ms.length} | ${preparation.probeChangeTo503Ms.map((v) => `${v} ms`).join(', ')} |`,
    `| load balancer probe: the completion observed to the first 200 | ${preparation.probeCompletedTo200Ms.length} | ${preparation.probeCompletedTo200Ms.map((v) => `${v} ms`).join(', ')} |`,
    `| Kubernetes: cordon, taint, drain 50 pods (30 s grace = 300 ms at the stand-in API server) | ${preparation.kubernetesDrain50PodsMs.length} | ${preparation.kubernetesDrain50PodsMs.map((v) => `${(v / 1000).toFixed(1)} s`).join(', ')} |`,
    '',
    '| a Spot eviction: Preempt with 30 s of notice, 50 pods whose own grace is 60 s (grace at the stand-in: 10 ms a second), poll every 1 s | node cordoned | every eviction accepted | node empty | longest grace given |',
    '|---|---|---|---|---|',
    ...preparation.spot.map(
      (s, i) =>
        `| round ${i + 1} | ${(s.cordonedMs / 1000).toFixed(2)} s | ${(s.evictionsAcceptedMs / 1000).toFixed(2)} s | ${(s.emptyMs / 1000).toFixed(2)} s | ${s.longestGraceS} s (NotBefore at ${s.notBeforeMs / 1000} s) |`,
    ),
    '',
    `| fleet budget: every member ready at once (approveAfterHooks, poll every 500 ms, retryMs 200) | approved | most down at once | a slot given back to the next StartRequests: p50 | p99 |`,
    '|---|---|---|---|---|',
    ...results.fleetBudget.runs.map(
      (r) =>
        `| ${r.members} bridges, ${r.maxUnavailable} slots, ${r.kind === 'blob' ? 'Blob Storage (Azurite)' : 'Leases (the API stand-in)'} | ${r.approved} | ${r.mostAtOnce} | ${r.releaseToNextStart.p50} ms | ${r.releaseToNextStart.p99} ms |`,
    ),
    '',
    `| fleet budget with a health check every ${budget.settle.intervalSeconds} s and ${budget.settle.settleSeconds} s of settle time (4 bridges, one slot) | approved | maintenance completed to slot given back: p50 | max | slot given back to the next StartRequests: p50 | max |`,
    '|---|---|---|---|---|---|',
    `| Blob Storage (Azurite) | ${budget.settle.approved} | ${Math.round(budget.settle.completedToRelease.p50)} ms | ${Math.round(budget.settle.completedToRelease.max)} ms | ${Math.round(budget.settle.releaseToNextStart.p50)} ms | ${Math.round(budget.settle.releaseToNextStart.max)} ms |`,
    '',
    '| fleet budget: requests to the store per member per minute (3 slots, heartbeat 30 s, retryMs 2 s) | idle | a wave (every member at once, 6 s each) | KiB answered per member per minute: idle, wave | lost writes per hand-off | served out of queue order |',
    '|---|---|---|---|---|---|',
    ...cost.map(
      (c) =>
        `| ${c.members} members, ${c.kind === 'blob' ? 'Blob Storage (Azurite)' : 'Leases (the API stand-in)'}${c.withHealth ? ', health checks' : ''} | ${c.idleTotalPerMemberPerMinute} (${Object.entries(
          c.idlePerMemberPerMinute,
        )
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}) | ${c.waveTotalPerMemberPerMinute} (${Object.entries(c.wavePerMemberPerMinute)
          .map(([k, v]) => `${k} ${v}`)
          .join(
            ', ',
          )}) | ${c.idleKiBPerMemberPerMinute ?? '-'}, ${c.waveKiBPerMemberPerMinute ?? '-'} | ${c.lostWritesPerHandOff ?? '-'} | ${c.servedOutOfOrder} of ${c.granted} |`,
    ),
    '',
    '| fleet budget brakes: requests to the store per member per minute (3 slots, heartbeat 30 s, an IMDS read every 1 s) | idle | idle, breaker on | a maintenance ahead, nothing asked | paused, every member held (policy asks at every read) | paused, breaker on | paused, the first minute (the first look) |',
    '|---|---|---|---|---|---|---|',
    ...[...new Set(brakes.map((b) => `${b.members} ${b.kind}`))].map((key) => {
      const of = (mode: string, breaker: boolean) =>
        brakes.find((b) => `${b.members} ${b.kind}` === key && b.mode === mode && b.breaker === breaker)!;
      const total = (b: (typeof brakes)[number]) =>
        `${b.totalPerMemberPerMinute} (${Object.entries(b.perMemberPerMinute)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')})`;
      const [n, kind] = key.split(' ');
      return `| ${n} members, ${kind === 'blob' ? 'Blob Storage (Azurite)' : 'Leases (the API stand-in)'} | ${total(of('idle', false))} | ${total(of('idle', true))} | ${total(of('scheduled', false))} | ${total(of('paused', false))} | ${total(of('paused', true))} | ${of('paused', false).firstMinuteTotal} |`;
    }),
    '',
    "| fleet budget across bridges as processes, every maintenance at once (4 s each; policy, IMDS read every 1 s, retryMs 2 s), Blob Storage (Azurite) | approved | most down at once | served out of the queue's order | wave (ideal) | overhead per round | hand-off p50 / p95 / max | slot use | lost writes per hand-off | requests per member per minute |",
    '|---|---|---|---|---|---|---|---|---|---|',
    ...processes.map(
      (p) =>
        `| ${p.members} members, ${p.maxUnavailable} slots | ${p.approved} | ${p.mostDownAtOnce} | ${p.servedOutOfOrder} (grant ${p.outOfOrderRanks.join(', ') || '-'}) | ${p.waveSeconds} s (${p.idealSeconds} s) | ${p.overheadPerRoundSeconds} s | ${p.handOffSeconds.p50} / ${p.handOffSeconds.p95} / ${p.handOffSeconds.max} s | ${p.slotUsePercent} % | ${p.lostWritesPerHandOff} | ${p.requestsPerMemberPerMinute} |`,
    ),
    '',
    "| a wave's collision, bridges as processes, every member due at once (policy, IMDS read every 1 s, retryMs 2 s) | CloudEvent ids (copies) | lost writes per hand-off | the busiest blob's busiest second | listing KiB per waiting member per minute |",
    '|---|---|---|---|---|',
    ...results.fleetBudget.waves.map(
      (w) =>
        `| ${w.members} members, ${w.maxUnavailable} slots, ${w.waveSeconds} s | ${w.waves.map((x) => `${x.ids} (${x.copies})`).join(', ') || '-'} | ${w.lostWritesPerHandOff} | ${Math.max(0, ...Object.values(w.busiestSecond))} | ${w.listKiBPerWaitingMemberPerMinute} |`,
    ),
    '',
    "| the fleet view: a reader asks the relay GET /v1/fleet/events 10 times a second; each member's event appears in turn, 50 ms apart | event at its VM to listed: p50 | p99 | max | store requests per relay request | per minute | relay VmRSS / RssAnon / PSS |",
    '|---|---|---|---|---|---|---|',
    ...view.map(
      (v) =>
        `| ${v.members} bridges, Blob Storage (Azurite), cacheMs ${v.cacheMs} | ${Math.round(v.toListedMs.p50)} ms | ${Math.round(v.toListedMs.p99)} ms | ${Math.round(v.toListedMs.max)} ms | ${v.storeRequestsPerRelayRequest} | ${v.storeRequestsPerMinute} | ${v.relay.vmRssMiB} / ${v.relay.rssAnonMiB} / ${v.relay.pssMiB} MiB |`,
    ),
    '',
    '| the fleet console, headless Chromium, Blob Storage (Azurite) | page / stylesheet / script, KiB (gzip) | first load to every bar placed: p50, max | a new event to its bar on the open page: p50, max | the relay makes the timeline: p50 |',
    '|---|---|---|---|---|',
    `| ${consoleRun.members} members, ${consoleRun.events} pending events | ${(['page', 'css', 'js'] as const).map((f) => `${(consoleRun.bytes[f]!.raw / 1024).toFixed(1)} (${(consoleRun.bytes[f]!.gzip / 1024).toFixed(1)})`).join(' / ')} | ${Math.round(consoleRun.firstLoadMs.p50)} ms, ${Math.round(consoleRun.firstLoadMs.max)} ms | ${Math.round(consoleRun.liveUpdateMs.p50)} ms, ${Math.round(consoleRun.liveUpdateMs.max)} ms | ${Math.round(consoleRun.makeTimelineMs.p50)} ms |`,
    '',
    "| the chat digest: 3 relay replicas, a look a minute each for an hour, a change every 10 minutes, a period every 30 | store requests per replica per minute (the fleet's listing; the digest's record) | per member | KiB listed per look | a look: p50, max | Slack: posted, updated (changes) |",
    '|---|---|---|---|---|---|',
    ...digest.map(
      (d) =>
        `| ${d.members} members, Blob Storage (Azurite) | ${d.perReplicaPerMinute.all} (${d.perReplicaPerMinute.list}; ${d.perReplicaPerMinute.digestRecord}) | ${d.perMemberPerMinute} | ${d.listedKiBPerLook} | ${Math.round(d.lookMs.p50)} ms, ${Math.round(d.lookMs.max)} ms | ${d.slack.posted}, ${d.slack.updated} (${d.slack.changes}) |`,
    ),
    '',
    `| memory, each profile alone after ${quick ? 10 : 25} s, one event carried to every sink; YAML configuration, log level info; its first start (no compile cache) and the next | VmRSS | RssAnon (private) | RssFile | PSS | VmRSS over bare node |`,
    '|---|---|---|---|---|---|',
    ...memory.map(
      (m) =>
        `| ${m.name} | ${m.vmRssMiB} MiB | ${m.rssAnonMiB} MiB | ${m.rssFileMiB} MiB | ${m.pssMiB} MiB | ${m.name === 'bare node' ? '-' : `+${(m.vmRssMiB - memory[0]!.vmRssMiB).toFixed(1)} MiB`} |`,
    ),
    '',
    `| the package's daemon, one file sink, after ${quick ? 8 : 20} s | RSS |`,
    '|---|---|',
    ...Object.entries(results.fleetBudget.rssMiB).map(([k, v]) => `| ${k} | ${v} MiB |`),
    '',
    `| a 10-minute webhook outage, default policy (${outage.trials} simulated runs of the dispatcher's backoff) | attempts: median ${outage.attemptsMedian}, max ${outage.attemptsMax} | dead-lettered: ${outage.deadLettered} | delivered after recovery: p50 ${(outage.recoveryWaitMs.p50 / 1000).toFixed(1)} s, max ${(outage.recoveryWaitMs.max / 1000).toFixed(1)} s |`,
    '|---|---|---|---|',
    '',
  ].join('\n');
  writeFileSync(join(ROOT, 'bench', 'results.md'), md);
  process.stdout.write(`\n${md}\nwritten: bench/results.json, bench/results.md, docs/latency.svg\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
