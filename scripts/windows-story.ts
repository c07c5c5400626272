/**
 * The steps npm run test:windows checks with the win-x64 executable under Wine: its version and
 * help, the Windows example configuration, the demo (its drill through the named pipe), then a
 * daemon against the project's IMDS simulator on 127.0.0.1 with a file sink, the probe, an exec
 * hook written as a .cmd script, the approval server and the metrics endpoint, for one
 * maintenance from scheduled to completed, approved through the API; status and dead letters
 * beside it; a second daemon on the same state refused; the stop the service wrapper sends
 * (Ctrl+C: SIGINT to the process), with the state intact afterwards.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { ImdsSimulator } from '../src/simulator/server.ts';
import { signatureHeaders } from '../src/lib/standard-webhooks.ts';
import { freePort } from '../src/lib/http-server.ts';
import { VERSION } from '../src/lib/version.ts';

export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface Wine {
  /** A path inside the root as Windows sees it (Z:\...). */
  windowsPath(p: string): string;
  /** A path inside the root as this machine sees it. */
  inRoot(p: string): string;
  run(args: readonly string[], env?: Readonly<Record<string, string>>, timeoutMs?: number): Promise<Run>;
  start(
    args: readonly string[],
    env: Readonly<Record<string, string>>,
  ): { child: ChildProcess; read(): { stdout: string; stderr: string } };
  write(p: string, text: string): void;
}

type Step = (name: string, check: () => Promise<string> | string) => Promise<boolean>;

const WORK = '/opt/se';

function expect(ok: boolean, why: string): void {
  if (!ok) throw new Error(why);
}

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((ok) => setTimeout(ok, 200));
  }
}

export async function windowsStory(wine: Wine, o: { work: string; step: Step }): Promise<void> {
  const { step } = o;
  const tail = (r: Run) => `exit ${r.code}; ${(r.stdout + r.stderr).trim().split('\n').slice(-3).join(' | ')}`;

  // the first run also makes the Wine prefix
  await step('--version', async () => {
    const r = await wine.run(['--version'], {}, 300_000);
    expect(r.code === 0 && r.stdout.trim() === VERSION, tail(r));
    return r.stdout.trim();
  });
  await step('--help', async () => {
    const r = await wine.run(['--help']);
    expect(r.code === 0 && r.stdout.includes('Usage: se-bridge <command>') && r.stdout.includes('drill'), tail(r));
    return '';
  });
  await step('validate the Windows example configuration', async () => {
    const r = await wine.run(['validate', '--config', wine.windowsPath(`${WORK}/config/bridge.yaml`)], {
      SE_BRIDGE_APPROVAL_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
    });
    expect(r.code === 0, tail(r));
    return '';
  });
  await step('demo --duration 20 (its drill through the named pipe)', async () => {
    const r = await wine.run(['demo', '--duration', '20', '--state-dir', wine.windowsPath(`${WORK}/demo`)], {}, 180_000);
    expect(r.code === 0, tail(r));
    expect(/Transitions seen per scenario/.test(r.stdout), 'no summary');
    expect(/PASSED: every step of the drill passed/.test(r.stdout), 'no passed drill');
    return 'exit 0, the transitions and the drill report printed';
  });
  await daemonStory(wine, step, tail);
}

async function daemonStory(wine: Wine, step: Step, tail: (r: Run) => string): Promise<void> {
  const sim = new ImdsSimulator({ vmName: 'winvm', tickMs: 50 });
  const imds = await sim.listen(0);
  const [probe, approvals, metrics] = [await freePort(), await freePort(), await freePort()];
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const hookOut = `${WORK}/hook-out.txt`;
  wine.write(
    `${WORK}/hook.cmd`,
    // the way a careful batch file reads arguments: into variables in quotes, echoed delayed
    [
      '@echo off',
      'setlocal EnableDelayedExpansion',
      'set "ONE=%~1"',
      'set "TWO=%~2"',
      `>> ${wine.windowsPath(hookOut)} echo %SE_TRANSITION% [!ONE!][!TWO!]`,
      'exit /b 0',
      '',
    ].join('\r\n'),
  );
  // a hook that hangs, with a child of its own: killed with its whole tree at its timeout
  wine.write(`${WORK}/hang.cmd`, ['@echo off', 'ping -n 120 127.0.0.1 > nul', 'exit /b 0', ''].join('\r\n'));
  const config = {
    imds: { endpoint: imds, pollIntervalMs: 200 },
    log: { level: 'info' },
    sinks: [
      { name: 'audit', type: 'file', path: wine.windowsPath(`${WORK}/events.jsonl`) },
      { name: 'lb', type: 'probe', listen: `127.0.0.1:${probe}`, drainSeconds: 1, prepare: true },
      { name: 'hook', type: 'exec', command: [wine.windowsPath(`${WORK}/hook.cmd`), 'two words', 'a&b'], prepare: true },
      {
        name: 'stuck',
        type: 'exec',
        command: [wine.windowsPath(`${WORK}/hang.cmd`)],
        timeoutMs: 3000,
        delivery: { maxAttempts: 1 },
        filter: { types: ['scheduled'] },
      },
    ],
    approval: { secret, rules: [{ match: {}, action: 'await' }] },
    server: { listen: `127.0.0.1:${approvals}` },
    observability: { listen: `127.0.0.1:${metrics}` },
  };
  wine.write(`${WORK}/bridge.yaml`, JSON.stringify(config));
  const cfg = wine.windowsPath(`${WORK}/bridge.yaml`);
  // no state.path: it goes to %ProgramData%\se-bridge\state.db
  const daemon = wine.start(['run', '--config', cfg], {});
  const events = () => {
    const f = wine.inRoot(`${WORK}/events.jsonl`);
    return existsSync(f)
      ? readFileSync(f, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { type: string; subject: string })
      : [];
  };
  try {
    const ready = await step('run: ready against the IMDS simulator', async () => {
      await until(
        async () => (await fetch(`http://127.0.0.1:${metrics}/readyz`).catch(() => null))?.status === 200,
        '/readyz 200',
        120_000,
      );
      return '/readyz 200';
    });
    if (!ready) return;
    const e = sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 1000 });
    await step('run: scheduled, prepared (probe 503, the .cmd hook), approved through the API, started, completed', async () => {
      await until(() => events().some((x) => x.type.endsWith('.scheduled')), 'scheduled in the file', 30_000);
      await until(async () => (await fetch(`http://127.0.0.1:${probe}/probe`)).status === 503, 'the probe out of service', 30_000);
      await until(() => existsSync(wine.inRoot(hookOut)), "the .cmd hook's output", 30_000);
      const body = JSON.stringify({ eventId: e.eventId, approver: 'windows-test' });
      const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
      const r = await fetch(`http://127.0.0.1:${approvals}/v1/approvals`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...signatureHeaders([key], `msg_${randomBytes(8).toString('hex')}`, body) },
        body,
      });
      expect(r.status === 200, `POST /v1/approvals: ${r.status} ${await r.text()}`);
      await until(() => sim.startRequests.length === 1, 'StartRequests at IMDS', 30_000);
      await until(() => events().some((x) => x.type.endsWith('.completed')), 'completed in the file', 60_000);
      await until(async () => (await fetch(`http://127.0.0.1:${probe}/probe`)).status === 200, 'the probe back in service', 30_000);
      const hook = readFileSync(wine.inRoot(hookOut), 'utf8');
      expect(hook.includes('scheduled [two words][a&b]'), `the hook read its arguments wrong: ${JSON.stringify(hook)}`);
      return `${events()
        .map((x) => x.type.split('.').pop())
        .join(', ')}; hook: ${hook.trim().split(/\r?\n/).join(' / ')}`;
    });
    await step('exec: a hung .cmd hook is killed with its process tree at its timeout', async () => {
      const pings = () => spawnSync('pgrep', ['-f', 'ping.exe']).stdout.toString().trim();
      let letters = '';
      await until(
        async () => {
          const r = await wine.run(['dead-letters', 'list', '--config', cfg, '--json']);
          letters = r.stdout;
          return letters.includes('stuck');
        },
        "the hung hook's dead letter",
        60_000,
      );
      expect(/timed out after 3000 ms; process group killed/.test(letters), `dead letter: ${letters.slice(0, 300)}`);
      await until(() => pings() === '', 'no ping.exe left of the killed tree', 10_000);
      return 'dead-lettered: timed out after 3000 ms; process group killed; no ping.exe left';
    });
    await step('status --json', async () => {
      const r = await wine.run(['status', '--config', cfg, '--json']);
      expect(r.code === 0, tail(r));
      const s = JSON.parse(r.stdout) as { vm: { name: string } };
      expect(s.vm.name === 'winvm', `vm ${s.vm.name}`);
      return `vm ${s.vm.name}`;
    });
    await step('dead-letters list', async () => {
      const r = await wine.run(['dead-letters', 'list', '--config', cfg]);
      expect(r.code === 0, tail(r));
      return r.stdout.trim().split('\n')[0] ?? '';
    });
    await step('a second run on the same state is refused (the lock on Windows)', async () => {
      const r = await wine.run(['run', '--config', cfg], {}, 60_000);
      expect(r.code === 1 && /STORE_LOCKED|another daemon/i.test(r.stderr + r.stdout), tail(r));
      return tail(r);
    });
    await step("stopped by the service wrapper's Ctrl+C, the state intact", async () => {
      daemon.child.kill('SIGINT');
      const code = await new Promise<number | null>((ok) => {
        const t = setTimeout(() => ok(-1), 30_000);
        daemon.child.once('exit', (c) => (clearTimeout(t), ok(c)));
      });
      expect(code === 0, `exit ${code}: ${JSON.stringify(daemon.read().stderr.slice(-400))}`);
      // it stopped as on SIGTERM: polling ended, deliveries drained, the store closed
      const log = daemon.read().stdout;
      expect(
        /"signal":"SIGINT"[^\n]*"msg":"shutting down"/.test(log) && log.includes('"msg":"bridge stopped"'),
        `no orderly stop in the log: ${log.slice(-300)}`,
      );
      const r = await wine.run(['dead-letters', 'list', '--config', cfg, '--json']);
      expect(r.code === 0, `after the stop: ${tail(r)}`);
      return 'exit 0; the state opens again';
    });
  } finally {
    if (daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    await sim.close();
  }
}
