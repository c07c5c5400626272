/**
 * The exec sink, end to end: hooks that leave children behind (delivered, not killed; an
 * approveAfterHooks approval follows), and events too large for the environment (cut to a
 * bound, the whole event on stdin).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { identityFrom } from '../../src/imds/identity.ts';
import { toCloudEvent } from '../../src/pipeline/cloudevent.ts';
import { diff } from '../../src/pipeline/diff.ts';
import { toDomainDocument, WireDocument } from '../../src/imds/wire.ts';
import { tempDir, waitFor } from '../../test/helpers.ts';
import { bridgeOn, cleanUpAfterEach, cleanups, simulator } from '../../test/integration/hardening-kit.ts';
import { configSchema as execSchema, MAX_ENV_VALUE_BYTES, runOnce } from './index.ts';

cleanUpAfterEach();

describe('exec hooks', () => {
  const hookEvent = (overrides: Record<string, unknown> = {}) => {
    const wire = {
      EventId: 'E-HOOK',
      EventType: 'Reboot',
      EventStatus: 'Scheduled',
      Resources: ['vm0'],
      NotBefore: 'Mon, 23 Nov 2026 10:00:00 GMT',
      ...overrides,
    };
    const [t] = diff(null, toDomainDocument(WireDocument.parse({ DocumentIncarnation: 1, Events: [wire] })).document);
    return toCloudEvent(t!, { vm: identityFrom(null, { name: 'vm0' }), observedAt: '2026-11-22T10:00:00Z' });
  };
  const execConfig = (command: string[], timeoutMs = 5000) => execSchema.parse({ type: 'exec', name: 'hook', command, timeoutMs });

  it('a hook that exits 0 and leaves a background child is delivered, not killed at its timeout', async () => {
    const dir = tempDir();
    cleanups.push(() => dir.cleanup());
    const pidFile = join(dir.path, 'daemon.pid');
    // the background child keeps the hook's stdout and stderr open, in a session of its own
    const script = `setsid sh -c 'echo $$ > "${pidFile}"; exec sleep 30' & echo "started a service"; exit 0`;
    cleanups.push(() => {
      try {
        process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
      } catch {
        /* gone */
      }
    });
    const outcome = await runOnce(execConfig(['sh', '-c', script], 3000), hookEvent(), new AbortController().signal);
    expect(outcome).toEqual({ status: 'delivered' });
  });

  it('a preparation hook that leaves a background child lets approveAfterHooks approve', async () => {
    const sim = await simulator();
    const dir = tempDir();
    cleanups.push(() => dir.cleanup());
    const pidFile = join(dir.path, 'daemon.pid');
    cleanups.push(() => {
      try {
        process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
      } catch {
        /* gone */
      }
    });
    const script = `setsid sh -c 'echo $$ > "${pidFile}"; exec sleep 30' & exit 0`;
    const { bridge } = await bridgeOn(sim, {
      identity: { vmName: 'vm0' },
      approval: { rules: [{ match: {}, action: 'approveAfterHooks' }] },
      sinks: [
        {
          name: 'drain',
          type: 'exec',
          command: ['sh', '-c', script],
          prepare: true,
          timeoutMs: 3000,
          filter: { types: ['scheduled'] },
          delivery: { maxAttempts: 1 },
        },
      ],
    });
    const e = sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => sim.startRequests.length === 1, 'the approval after the hook', 10_000);
    expect(sim.startRequests[0]!.eventIds).toEqual([e.eventId]);
    expect(bridge.store.outbox.deadLetters()).toEqual([]);
  });

  it('a huge event and a NUL in a field: delivered, with the variables cut or left out and the full event on stdin', async () => {
    const dir = tempDir();
    cleanups.push(() => dir.cleanup());
    const resources = Array.from({ length: 100_000 }, (_, i) => `scaleset_${i}`);
    const event = hookEvent({ Resources: resources, Description: 'line\u0000after NUL' });
    const out = join(dir.path, 'env.txt');
    const stdin = join(dir.path, 'stdin.json');
    const script = `cat > "${stdin}"; { echo "T=$SE_ENV_TRUNCATED"; echo "O=$SE_ENV_OMITTED"; echo "D=\${SE_DESCRIPTION-unset}"; echo "R=\${#SE_RESOURCES}"; } > "${out}"`;
    const outcome = await runOnce(execConfig(['sh', '-c', script]), event, new AbortController().signal);
    expect(outcome).toEqual({ status: 'delivered' });
    const env = Object.fromEntries(
      readFileSync(out, 'utf8')
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, 1), l.slice(2)]),
    );
    expect(env).toEqual({ T: 'SE_RESOURCES', O: 'SE_DESCRIPTION', D: 'unset', R: String(MAX_ENV_VALUE_BYTES) });
    const received = JSON.parse(readFileSync(stdin, 'utf8')) as { data: { resources: string[]; description: string } };
    expect(received.data.resources).toHaveLength(100_000);
    expect(received.data.description).toBe('line\u0000after NUL');
  });
});
