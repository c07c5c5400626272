/** The approval tests' harness: the bridge with its approval server in front of the IMDS simulator, and ways to call it. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, beforeEach } from 'vitest';
import type { Bridge } from '../../src/daemon/bridge.ts';
import { secretKey, signatureHeaders } from '../../src/lib/standard-webhooks.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { startBridge } from '../../testkit/harness.ts';
import { tempDir, waitFor } from '../helpers.ts';

export const SECRET = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
export const KEY = secretKey(SECRET)!;
export const SLACK_SECRET = 'slack-signing-secret-for-tests';

export let sim: ImdsSimulator;
export let dir: ReturnType<typeof tempDir>;
export let bridge: Bridge | null = null;
export let base = '';
export let lines: Record<string, unknown>[] = [];

/** useApprovalBridge registers a fresh simulator and directory before each test of the calling file, and their cleanup after it. */
export function useApprovalBridge(): void {
  beforeEach(async () => {
    sim = new ImdsSimulator({ vmName: 'vm0', peers: ['vm1', 'vm2'], tickMs: 10 });
    await sim.listen(0);
    dir = tempDir();
  });
  afterEach(async () => {
    await bridge?.stop(1000);
    bridge = null;
    await sim.close();
    dir.cleanup();
  });
}

export async function run(approval: Record<string, unknown> = {}, sinks: Record<string, unknown>[] = [], dryRun = false, burst = 30) {
  const h = await startBridge({
    sim,
    dir: dir.path,
    dryRun,
    sinks: [{ name: 'audit', type: 'file', path: join(dir.path, 'events.jsonl') }, ...sinks],
    config: {
      approval: {
        secret: SECRET,
        publicUrl: 'https://bridge.example.com',
        slack: { signingSecret: SLACK_SECRET, responseUrls: ['http://127.0.0.1:'] },
        ...approval,
      },
      server: { listen: '127.0.0.1:0', rateLimit: { perSecond: 10, burst } },
    },
  });
  lines = h.lines;
  bridge = h.bridge;
  base = bridge.approvalServerUrl!;
}
export const delivered = () => {
  try {
    return readFileSync(join(dir.path, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; subject: string; data: { approval?: { by: string; via: string } } });
  } catch {
    return [];
  }
};
export const approvedEvents = () => delivered().filter((e) => e.type === 'azure.scheduledevent.approved');
export async function scheduled(over: Record<string, unknown> = {}) {
  const e = sim.addEvent({ noticeMs: 600_000, ...over });
  await waitFor(() => delivered().some((x) => x.subject === e.eventId), 'the scheduled event');
  return e;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json: () => { eventId?: string; status?: string; error?: { code: string; message: string } };
}
export async function call(
  method: string,
  path: string,
  body: string | Buffer | undefined,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await request(`${base}${path}`, { method: method as 'POST', headers, body });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text, json: () => JSON.parse(text) };
}
export function signedApproval(body: string, id = `msg_${Math.random().toString(36).slice(2)}`, key = KEY, now = Date.now()) {
  return call('POST', '/v1/approvals', body, { 'content-type': 'application/json', ...signatureHeaders([key], id, body, now) });
}
