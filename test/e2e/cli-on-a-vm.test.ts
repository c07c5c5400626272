/**
 * The CLI as it is used on a VM, as a real process: the secrets live in the service's
 * environment file, which only systemd reads for the daemon. A verb resolves only what it uses
 * (one that asks the running daemon or reads the state database needs no secret at all), and
 * reads the environment file (--env-file, $SE_BRIDGE_ENV_FILE, else the installed unit's) saying
 * which it read. Also: help for a verb, -v, and a reader that goes away.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { CLI, ROOT, tempDir } from '../helpers.ts';
import { cli } from './process.ts';

let dir: ReturnType<typeof tempDir>;
let sim: ImdsSimulator;
let cfg: string;
let envFile: string;
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
// none of these is set in the caller's environment: only the file has them
const clean = { SLACK_URL: undefined, APPROVAL_SECRET: undefined, SE_BRIDGE_ENV_FILE: join('/nonexistent', 'se-bridge.env') };

beforeAll(async () => {
  dir = tempDir();
  sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  await sim.listen(0);
  cfg = join(dir.path, 'bridge.yaml');
  writeFileSync(
    cfg,
    [
      `imds: { endpoint: ${sim.url} }`,
      `state: { path: ${JSON.stringify(join(dir.path, 'state.db'))} }`,
      'sinks:',
      '  - { name: chat, type: slack, webhookUrl: "${SLACK_URL}" }',
      `  - { name: audit, type: file, path: ${JSON.stringify(join(dir.path, 'events.jsonl'))} }`,
      'approval: { secret: "${APPROVAL_SECRET}", publicUrl: "https://vm0.example.com" }',
      'observability: { listen: off }',
      '',
    ].join('\n'),
  );
  envFile = join(dir.path, 'se-bridge.env');
  writeFileSync(envFile, `# the service's secrets\nSLACK_URL="https://hooks.slack.com/services/T0/B0/x"\n\nAPPROVAL_SECRET=${SECRET}\n`);
});
afterAll(async () => {
  await sim.close();
  dir.cleanup();
});

describe('secrets on a VM', () => {
  it('a verb that needs no secret works without them: status, dead-letters, drill (which then asks the daemon)', async () => {
    const status = await cli(['status', '--config', cfg, '--json'], clean);
    expect(status.stderr).not.toMatch(/is not set/);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ events: [] });
    const dead = await cli(['dead-letters', 'list', '--config', cfg], clean);
    expect([dead.code, dead.stdout]).toEqual([0, expect.stringMatching(/no dead letters/)]);
    // no daemon runs: the drill gets as far as the control channel, and says so (exit 1, not 2)
    const drill = await cli(['drill', '--config', cfg], clean);
    expect(drill.stderr).not.toMatch(/is not set/);
    expect(drill.code).toBe(1);
  });

  it("status resolves what it reads, and none of the sinks' secrets, of any shape (a Slack bot token)", async () => {
    const bot = join(dir.path, 'bot.yaml');
    writeFileSync(
      bot,
      [
        `imds: { endpoint: ${sim.url} }`,
        'state: { path: "${STATE_DIR}/bot.db" }',
        'sinks:',
        '  - { name: chat, type: slack, botToken: "${SLACK_BOT_TOKEN}", channel: C0123456789 }',
        '  - { name: grid, type: eventgrid, endpoint: "https://t.westeurope-1.eventgrid.azure.net", accessKey: "${GRID_KEY}" }',
        'observability: { listen: off }',
        '',
      ].join('\n'),
    );
    const unset = { ...clean, SLACK_BOT_TOKEN: undefined, GRID_KEY: undefined };
    const status = await cli(['status', '--config', bot, '--json'], { ...unset, STATE_DIR: dir.path });
    expect(status.stderr).not.toMatch(/is not set|configuration problem/);
    expect([status.code, JSON.parse(status.stdout || 'null')]).toEqual([0, expect.objectContaining({ events: [] })]);
    // what status reads itself (its state database) is resolved, and named when its variable is not set
    const noState = await cli(['status', '--config', bot], { ...unset, STATE_DIR: undefined });
    expect([noState.code, noState.stderr]).toEqual([2, expect.stringContaining('state.path: environment variable STATE_DIR is not set')]);
    expect(noState.stderr).not.toMatch(/SLACK_BOT_TOKEN|GRID_KEY/);
    // so do the verbs that read the state database or ask the daemon beside it
    for (const verb of [['dead-letters', 'list'], ['drill']]) {
      const r = await cli([...verb, '--config', bot], { ...unset, STATE_DIR: undefined });
      expect([verb, r.code, r.stderr]).toEqual([verb, 2, expect.stringContaining('state.path: environment variable STATE_DIR is not set')]);
    }
    const dead = await cli(['dead-letters', 'list', '--config', bot], { ...unset, STATE_DIR: dir.path });
    expect([dead.code, dead.stdout]).toEqual([0, expect.stringMatching(/no dead letters/)]);
    // validate still names both
    const validate = await cli(['validate', '--config', bot], { ...unset, STATE_DIR: dir.path });
    expect(validate.code).toBe(2);
    expect(validate.stderr).toContain('sinks[0].botToken: environment variable SLACK_BOT_TOKEN is not set');
    expect(validate.stderr).toContain('sinks[1].accessKey: environment variable GRID_KEY is not set');
  });

  it('a verb that needs a secret names the variable (exit 2); from --env-file it has it, and says which file it read', async () => {
    const missing = await cli(['validate', '--config', cfg], clean);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/sinks\[0\]\.webhookUrl: environment variable SLACK_URL is not set/);
    expect(missing.stderr).toMatch(/approval\.secret: environment variable APPROVAL_SECRET is not set/);
    const approve = await cli(['approve', 'E1', '--config', cfg], clean);
    expect(approve.code).toBe(2);
    expect(approve.stderr).toMatch(/APPROVAL_SECRET is not set/);
    expect(approve.stderr).not.toMatch(/SLACK_URL/);

    const valid = await cli(['validate', '--config', cfg, '--env-file', envFile], clean);
    expect(valid.stderr).toContain(`se-bridge: read ${envFile}`);
    expect(valid.code).toBe(0);
  });

  it("the default file ($SE_BRIDGE_ENV_FILE, else the installed unit's) is read when it exists; the caller's environment wins", async () => {
    const valid = await cli(['validate', '--config', cfg], { ...clean, SE_BRIDGE_ENV_FILE: envFile, APPROVAL_SECRET: 'not-a-whsec' });
    expect(valid.stderr).toContain(`se-bridge: read ${envFile}`);
    expect(valid.code).toBe(2);
    expect(valid.stderr).toMatch(/approval\.secret/);
  });

  it('an --env-file that cannot be read, or is not KEY=VALUE, is an error naming it', async () => {
    // Node itself takes --env-file wherever it stands among the arguments and stops at a missing
    // file (exit 9) before the command runs: the error still names the file
    const none = await cli(['validate', '--config', cfg, '--env-file', join(dir.path, 'nope.env')], clean);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toMatch(/nope\.env/);
    const bad = join(dir.path, 'bad.env');
    writeFileSync(bad, 'SLACK_URL=x\nthis is not a variable\n');
    const wrong = await cli(['validate', '--config', cfg, '--env-file', bad], clean);
    expect([wrong.code, wrong.stderr]).toEqual([2, expect.stringMatching(/bad\.env, line 2: expected KEY=VALUE/)]);
  });
});

describe('small things a new user meets', () => {
  it("help VERB prints that verb's usage; -v the version", async () => {
    const help = await cli(['help', 'status']);
    expect([help.code, help.stdout.split('\n')[0]]).toEqual([0, 'Usage: se-bridge status [--config FILE] [--env-file FILE] [--json]']);
    const v = await cli(['-v']);
    expect([v.code, v.stdout.trim()]).toEqual([0, expect.stringMatching(/^\d+\.\d+\.\d+/)]);
  });

  it('schema | head: a reader that goes away ends the command quietly, with no stack trace', async () => {
    const child = spawn(process.execPath, [CLI, 'schema'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    // read the first chunk, then close the pipe as `head` does
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    child.stdout.destroy();
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(stderr).not.toMatch(/EPIPE|Error/);
    expect(code).toBe(0);
  });
});
