/**
 * Approval round trip: a signed POST /v1/approvals to the StartRequests POST arriving at the
 * IMDS simulator, through the real approval server and service. Approvals are spaced so the
 * shared 5 requests/s IMDS budget (polls included) is not what is measured.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { request } from 'undici';
import { validateConfig } from '../src/config/load.ts';
import { Bridge } from '../src/core/bridge.ts';
import { ImdsSimulator } from '../src/imds/simulator/server.ts';
import { secretKey, signatureHeaders } from '../sinks/webhook-signature.ts';

const quick = process.argv.includes('--quick');
const N = quick ? 60 : 200;
const q = (s: number[], p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
const secret = `whsec_${Buffer.alloc(32, 2).toString('base64')}`;
const key = secretKey(secret)!;
const dir = mkdtempSync(join(tmpdir(), 'se-bridge-bench-'));
const sim = new ImdsSimulator({ tickMs: 50 });
await sim.listen(0);
const config = validateConfig(
  { imds: { endpoint: sim.url, pollIntervalMs: 1000 }, state: { path: join(dir, 's.db') }, approval: { secret }, server: { listen: '127.0.0.1:0', rateLimit: { perSecond: 1000, burst: 1000 } } },
  'bench',
  {},
);
const bridge = await Bridge.create({ config, logger: pino({ level: 'silent' }) });
await bridge.start();
const ids = Array.from({ length: N }, () => sim.addEvent({ noticeMs: 3_600_000 }).eventId);
for (let k = 0; k < 200 && !bridge.store.knowsEvent(ids.at(-1)!); k++) await new Promise((r) => setTimeout(r, 50));
const samples: number[] = [];
for (const id of ids) {
  const body = JSON.stringify({ eventId: id, approver: 'bench' });
  const t0 = Date.now();
  const res = await request(`${bridge.approvalServerUrl}/v1/approvals`, { method: 'POST', headers: { 'content-type': 'application/json', ...signatureHeaders([key], `msg_${id}`, body) }, body });
  await res.body.dump();
  const at = sim.startRequests.find((s) => s.eventIds.includes(id))?.at;
  if (res.statusCode === 200 && at !== undefined) samples.push(at - t0);
  await new Promise((r) => setTimeout(r, 350));
}
await bridge.stop(1000);
await sim.close();
rmSync(dir, { recursive: true, force: true });
samples.sort((a, b) => a - b);
process.stdout.write(`\n| approval round trip (${samples.length} signed approvals) | p50 ${q(samples, 0.5)} ms, p99 ${q(samples, 0.99)} ms, max ${samples.at(-1)} ms |\n`);
