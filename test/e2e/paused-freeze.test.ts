/**
 * A live-migration Freeze pauses the VM, and the bridge with it, while its event is Started;
 * after the pause the event may already be gone. Played with the daemon as a real process,
 * stopped with SIGSTOP before NotBefore and resumed with SIGCONT once the IMDS simulator has
 * started and removed the event: the file sink gets `completed`, Started not observed, never
 * `canceled`. (POSIX signals: Linux only.)
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { readJsonLines, tempDir, waitFor } from '../helpers.ts';
import { start, stopProcesses } from './process.ts';

let dir: ReturnType<typeof tempDir>;
let sim: ImdsSimulator;
beforeAll(async () => {
  dir = tempDir();
  sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  await sim.listen(0);
});
afterAll(async () => {
  await sim.close();
  dir.cleanup();
});

interface Line {
  type: string;
  subject: string;
  data: Record<string, unknown>;
}
const file = () => join(dir.path, 'events.jsonl');
const lines = (): Line[] => readJsonLines<Line>(file());
const of = (eventId: string) => lines().filter((l) => l.subject === eventId);

describe.skipIf(process.platform === 'win32')('a Freeze that pauses the bridge', () => {
  it('is completed, Started not observed, when the bridge resumes after the event is gone', async () => {
    const cfg = join(dir.path, 'bridge.yaml');
    writeFileSync(
      cfg,
      `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }\nstate: { path: ${JSON.stringify(join(dir.path, 'state.db'))} }\nsinks: [{ name: audit, type: file, path: ${JSON.stringify(file())} }]\nlog: { level: warn }\n`,
    );
    const child = start(['run', '--config', cfg]);
    try {
      // the pause must begin before NotBefore: on a loaded machine the first try may see the
      // event too late, so the notice grows (three tries at most)
      let paused: string | null = null;
      for (const noticeMs of [3_000, 10_000, 30_000]) {
        const e = sim.addEvent({ EventType: 'Freeze', DurationInSeconds: 5, noticeMs, startedMs: 300 });
        await waitFor(() => of(e.eventId).length > 0, 'the scheduled Freeze', 30_000);
        child.kill('SIGSTOP');
        if (sim.events.find((x) => x.eventId === e.eventId)?.status === 'Scheduled') {
          paused = e.eventId;
          break;
        }
        child.kill('SIGCONT');
        await waitFor(() => of(e.eventId).some((l) => l.type.endsWith('.completed')), 'the late try to end', 60_000);
      }
      expect(paused, 'the bridge was stopped before NotBefore in one of three tries').not.toBeNull();
      await waitFor(() => !sim.events.some((x) => x.eventId === paused), 'the simulator to start and remove the Freeze', 60_000);
      child.kill('SIGCONT');
      await waitFor(() => of(paused!).length === 2, 'the end of the Freeze', 30_000);
      const [scheduled, end] = of(paused!);
      expect(scheduled!.type).toBe('azure.scheduledevent.scheduled');
      expect(end!.type).toBe('azure.scheduledevent.completed');
      expect(end!.data).toMatchObject({ eventType: 'Freeze', startedObserved: false, completedBecause: 'notBefore' });
    } finally {
      child.kill('SIGCONT');
      await stopProcesses([child]);
    }
  });
});
