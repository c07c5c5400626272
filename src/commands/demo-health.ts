/**
 * The health gates of `se-bridge demo --fleet`: app-0 and app-1 in group "app", which allows one
 * member down at once, each checking its service (`fleet.health`: an HTTP check every second
 * against an endpoint the demo turns on and off). app-0 is approved; its service goes down with
 * the reboot and is still down when the maintenance is over, so app-0 keeps its slot and app-1's
 * approval is held. Once app-0's service answers again and has been healthy for settleSeconds,
 * the slot is given back and app-1 is approved. Every step waits for what shows it happened.
 */
import { createServer } from 'node:http';
import { z } from 'zod';
import { listen } from '../lib/http-server.ts';
import { must } from '../lib/must.ts';
import type { BridgeEvent } from '../pipeline/cloudevent.ts';
import { ask, imdsReadsSince, say, startMember, stopwatch, until, type Closers, type DemoContext, type Member } from './demo-kit.ts';

/** How long a member must be healthy after its maintenance before its slot is given back. */
const SETTLE_S = 2;

/** What /readyz says of this VM's health checks. */
const ReadyHealth = z.object({
  health: z.object({ healthy: z.boolean(), since: z.string().optional(), detail: z.string().optional() }).optional(),
});

/** serviceEndpoints: each VM's service as its health check sees it, GET /<vm>: 200, or 503 while the demo has it down. */
async function serviceEndpoints(closers: Closers) {
  const down = new Set<string>();
  const server = createServer((req, res) => {
    const name = (req.url ?? '').slice(1);
    res.writeHead(down.has(name) ? 503 : 200, { 'content-type': 'text/plain' }).end(down.has(name) ? 'catching up\n' : 'ok\n');
  });
  const base = await listen(server, '127.0.0.1', 0);
  closers.add(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return {
    url: (vm: string) => `${base}/${vm}`,
    set: (vm: string, up: boolean) => void (up ? down.delete(vm) : down.add(vm)),
  };
}

/** healthDemo returns whether app-1 was approved only after app-0 was whole again; the members run on to the end. */
export async function healthDemo(ctx: DemoContext): Promise<{ ok: boolean; members: Member[] }> {
  say(
    `\nHealth gates: app-0 and app-1 in group "app", which allows one member down at once. Each checks its service every second (fleet.health: an HTTP check against an endpoint this demo turns on and off); after its maintenance a member keeps its slot until it has been healthy for ${SETTLE_S} s.`,
  );
  const service = await serviceEndpoints(ctx.closers);
  const completed = new Set<string>();
  const onCommitted = (events: readonly BridgeEvent[]) => {
    for (const e of events) if (e.type === 'azure.scheduledevent.completed' && e.subject !== undefined) completed.add(e.subject);
  };
  const members: Member[] = [];
  for (const name of ['app-0', 'app-1']) {
    const config = {
      observability: { listen: '127.0.0.1:0' },
      approval: { rules: [{ match: {}, action: 'approve' }] },
      fleet: {
        ...{ group: 'app', maxUnavailable: 1, store: ctx.store, retryMs: 250, heartbeatSeconds: 5 },
        health: { http: { url: service.url(name) }, intervalSeconds: 1, settleSeconds: SETTLE_S, timeoutSeconds: 120 },
      },
    };
    members.push(await startMember(ctx, name, config, { tickMs: 20, onCommitted }));
  }
  const [a, b] = [must(members[0], 'app-0'), must(members[1], 'app-1')];
  const healthOf = async (m: Member) => {
    const res = await ask(ctx.http, `${must(m.bridge.observabilityUrl, 'the observability endpoint')}/readyz`);
    return ReadyHealth.parse(JSON.parse(res.text)).health ?? null;
  };
  // both services answer, and both members have said so, before anything happens
  await until(async () => (await healthOf(a))?.healthy && (await healthOf(b))?.healthy, 'the first health checks');
  const at = stopwatch();

  const first = a.sim.addEvent({ EventType: 'Reboot', noticeMs: 15 * 60_000 }).eventId;
  const slot = await until(() => a.sim.startRequests.length > 0 && a.bridge.fleet?.slot, "app-0's approval");
  say(`  ${at()}  app-0: approved by policy, holds ${slot.name}: in maintenance`);
  service.set('app-0', false);
  say(`  ${at()}  app-0: its service goes down with the reboot (${service.url('app-0')} answers 503)`);
  const sick = await until(async () => {
    const h = await healthOf(a);
    return h?.healthy === false && h;
  }, "app-0's health check");
  say(`  ${at()}  app-0: not healthy (${sick.detail ?? 'no detail'})`);

  // the maintenance ends: IMDS no longer lists it; the bridge says it completed, and reads IMDS again after that
  a.sim.removeEvent(first);
  await until(() => completed.has(first), "the end of app-0's maintenance");
  const seen = Date.now();
  await until(() => imdsReadsSince(a.sim, seen) >= 2, "app-0's next reads of IMDS");
  const kept = a.bridge.fleet?.slot ?? null;
  say(
    kept === null
      ? `  ${at()}  app-0: maintenance over, and its slot was given back although it is not healthy`
      : `  ${at()}  app-0: maintenance over (IMDS no longer lists it), but not healthy: it keeps ${kept.name}`,
  );

  b.sim.addEvent({ EventType: 'Reboot', noticeMs: 15 * 60_000 });
  const held = await until(() => {
    const s = b.bridge.fleet;
    return s !== null && s.held.length > 0 && s.holders.length > 0 && s.holders;
  }, "app-1's approval held");
  say(
    `  ${at()}  app-1: Reboot scheduled; the policy's approval is held (the slot is held by ${held.map((h) => h.vm).join(', ')}, not healthy yet)`,
  );

  service.set('app-0', true);
  const upAt = Date.now();
  say(`  ${at()}  app-0: its service answers 200 again`);
  await until(() => a.bridge.fleet?.slot === null, "app-0's slot given back", 30_000);
  say(`  ${at()}  app-0: healthy for ${SETTLE_S} s: ${slot.name} given back`);
  const next = await until(() => b.sim.startRequests[0], "app-1's approval", 30_000);
  say(`  ${at(next.at)}  app-1: holds ${b.bridge.fleet?.slot?.name ?? 'no slot'}: approved`);

  // app-0's slot could be given back only once it had been healthy for SETTLE_S, after its service came back
  const ok = kept !== null && a.sim.startRequests.length === 1 && next.at - upAt >= SETTLE_S * 1000;
  say(
    ok
      ? '\napp-1 waited until app-0 was whole again, not only until its maintenance was over.'
      : '\nSomething went wrong: app-1 was approved before app-0 was whole again.',
  );
  return { ok, members };
}
