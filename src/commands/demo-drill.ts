/**
 * The demo's last act: one drill (se-bridge drill) through the running bridge's control channel,
 * once the scenarios' events have ended, and its report.
 */
import { controlCall } from '../control/client.ts';
import type { DrillState } from '../drill/drills.ts';
import { sleep } from '../lib/time.ts';
import type { ImdsSimulator } from '../simulator/server.ts';
import { reportText, waitForEnd } from './drill.ts';

/** A Freeze of 3 s: the demo's policy approves it (short-freeze); the probe rehearses. */
const DRILL = { type: 'Freeze', noticeSeconds: 5, durationSeconds: 3 };

/** demoDrill plays the drill and prints its report; true when every step passed. */
export async function demoDrill(statePath: string, sim: ImdsSimulator, out: NodeJS.WritableStream): Promise<boolean> {
  out.write(
    `\n-- a drill: \`se-bridge drill --type Freeze --notice 5s --duration 3s\`, played through every sink; nothing is asked of Azure\n`,
  );
  // the scenarios' events end first: no drill while a real event is pending
  sim.reset();
  let started = await controlCall(statePath, 'POST', '/v1/drills', DRILL);
  for (let i = 0; started.status === 409 && i < 40; i += 1) {
    await sleep(500);
    started = await controlCall(statePath, 'POST', '/v1/drills', DRILL);
  }
  if (started.status !== 201) {
    out.write(`   the drill was refused: ${String((started.body as { message?: string }).message)}\n`);
    return false;
  }
  const drill = (started.body as { drill: DrillState }).drill;
  const report = await waitForEnd(statePath, drill.eventId, drill.request.noticeMs + drill.request.durationMs);
  out.write(`\nThe drill's report (se-bridge drill prints it):\n${reportText(report)}\n`);
  return report.passed;
}
