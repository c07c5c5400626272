import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { Store } from '../../src/store/store.ts';
import { CLI, EXAMPLE_ENV, fixtureDocument, freePort, tempDir, waitFor } from '../helpers.ts';
import { cli, command, finished, start } from './process.ts';

/** Where an installed service keeps its configuration: the last place a command looks. */
const INSTALLED_CONFIG =
  process.platform === 'win32' ? join(process.env.ProgramData ?? '', 'se-bridge', 'bridge.yaml') : '/etc/se-bridge/bridge.yaml';

let dir: ReturnType<typeof tempDir>;
let sim: ImdsSimulator;
beforeAll(async () => {
  dir = tempDir();
  sim = new ImdsSimulator({ vmName: 'vm0' });
  await sim.listen(0);
});
afterAll(async () => {
  await sim.close();
  dir.cleanup();
});

function writeConfig(name: string, text: string): string {
  const path = join(dir.path, name);
  writeFileSync(path, text);
  return path;
}

/** withState: a file NAME.yaml of these lines, with a state of its own. */
const withState = (name: string, lines: string[]) =>
  writeConfig(`${name}.yaml`, [`state: { path: ${JSON.stringify(join(dir.path, `${name}.db`))} }`, ...lines, ''].join('\n'));

/** calendarConfig: a file NAME.yaml with a state of its own and this calendar (its lines under `calendar:`). */
const calendarConfig = (name: string, lines: string[]) => withState(name, ['calendar:', ...lines]);

describe('se-bridge CLI', () => {
  it('simulate: serves Scheduled Events and managed identity tokens, and says how to point the Azure SDKs at it', async () => {
    const port = await freePort();
    const child = start(['simulate', '--listen', `127.0.0.1:${port}`, '--scenario', 'user-reboot']);
    try {
      await waitFor(() => child.out.stdout.includes('AZURE_POD_IDENTITY_AUTHORITY_HOST='), 'the banner');
      expect(child.out.stdout).toContain(`AZURE_POD_IDENTITY_AUTHORITY_HOST=http://127.0.0.1:${port}`);
      const doc = (await (
        await fetch(`http://127.0.0.1:${port}/metadata/scheduledevents?api-version=2020-07-01`, { headers: { metadata: 'true' } })
      ).json()) as { Events: unknown[] };
      expect(doc.Events).toHaveLength(1);
      const token = await fetch(
        `http://127.0.0.1:${port}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https://eventgrid.azure.net`,
        { headers: { metadata: 'true' } },
      );
      expect(token.status).toBe(200);
      expect(await token.json()).toMatchObject({
        resource: 'https://eventgrid.azure.net',
        token_type: 'Bearer',
        access_token: expect.stringMatching(/^eyJ/),
      });
    } finally {
      child.kill('SIGTERM');
      expect((await finished(child)).code).toBe(0);
    }
  });

  it('prints usage and exits 2 without a command, or with an unknown one', async () => {
    const none = await cli([]);
    expect(none.code).toBe(2);
    expect(none.stdout).toMatch(/^Usage: se-bridge <command>/);
    const unknown = await cli(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command "frobnicate"/);
    const badFlag = await cli(['validate', '--nope']);
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toMatch(/--nope/);
  });

  it('every verb and sub-verb answers --help (and -h) with exit 0 and its own usage', async () => {
    const verbs = [
      ['run'],
      ['demo'],
      ['simulate'],
      ['validate'],
      ['status'],
      ['approve'],
      ['dead-letters'],
      ['dead-letters', 'list'],
      ['dead-letters', 'replay'],
      ['schema'],
      ['relay'],
      ['fleet'],
      ['fleet', 'keys'],
      ['fleet', 'link-key'],
      ['fleet', 'public-key'],
      ['fleet', 'forget'],
      ['template'],
      ['template', 'test'],
    ];
    const runs = await Promise.all(verbs.map((v, i) => cli([...v, i % 2 === 0 ? '--help' : '-h'])));
    runs.forEach((r, i) => {
      expect({ verb: verbs[i], code: r.code, stderr: r.stderr }).toEqual({ verb: verbs[i], code: 0, stderr: '' });
      expect(r.stdout.split('\n')[0]).toMatch(new RegExp(`^Usage: se-bridge ${verbs[i]!.join(' ')}( |$)`));
    });
    // a usage error names the verb's own usage
    const bad = await cli(['fleet', 'nope']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('Usage: se-bridge fleet keys | link-key --vm ID | public-key');
    // seventeen processes start at once: on a loaded machine of two cores that takes its time
  }, 120_000);

  it('validate: exit 0 for a valid file', async () => {
    const r = await cli(['validate', '--config', 'config/bridge.example.yaml'], EXAMPLE_ENV);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      'config/bridge.example.yaml: valid; sinks: console (stdout), ops (webhook), pipeline (eventhubs), queue (servicebus), grid (eventgrid), chat (slack), teams (teams), drain (exec), lb (probe), node (kubernetes), audit (file)\n',
    );
  });

  it('validate: exit 2 listing every problem by path, an unknown sink type hiding none of the others', async () => {
    const path = writeConfig(
      'bad.yaml',
      'imds: { pollIntervalMs: 10 }\nsinks:\n  - { name: x, type: file, path: "${MISSING_VAR}" }\n  - { name: y, type: carrier-pigeon }\n  - { name: z, type: stdout }\n  - { name: z, type: stdout }\n  - { name: m, type: module, module: ./no-such-sink.js }\napproval: { publicUrl: "https://bridge.example.com" }\nwat: 1\n',
    );
    const r = await cli(['validate', '--config', path]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${path}: 7 configuration problems:`);
    for (const line of [
      'sinks[0].path: environment variable MISSING_VAR is not set',
      'imds.pollIntervalMs: must be at least 200',
      'sinks[1].type: must be one of webhook | eventhubs | servicebus | eventgrid | slack | teams | exec | stdout | file | probe | kubernetes | module',
      'sinks[3].name: duplicate sink name "z" (also sinks[2])',
      'sinks[4].module: cannot load',
      'approval.secret: is required with approval.publicUrl',
      'wat: unknown key',
    ]) {
      expect(r.stderr).toContain(line);
    }
  });

  it('validate and run: refuse the example with a published secret (exit 2, naming each key), and with its secrets unset', async () => {
    const published = {
      ...EXAMPLE_ENV,
      SE_BRIDGE_APPROVAL_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      OPS_WEBHOOK_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      SLACK_SIGNING_SECRET: '8f742231b10e8888abcd99yyyzzz85a5',
    };
    for (const verb of ['validate', 'run']) {
      const r = await cli([verb, '--config', 'config/bridge.example.yaml'], published);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('3 configuration problems');
      for (const key of ['sinks[1].secret', 'approval.secret', 'approval.slack.signingSecret'])
        expect(r.stderr).toContain(`${key}: is a published example value, known to anyone`);
    }
    const unset = await cli(['validate', '--config', 'config/bridge.example.yaml']);
    expect(unset.code).toBe(2);
    expect(unset.stderr).toContain('approval.secret: environment variable SE_BRIDGE_APPROVAL_SECRET is not set');
  });

  it('validate: warns (exit 0) when a preparation names transitions that would prepare the VM again', async () => {
    const path = writeConfig(
      'prep.yaml',
      'sinks:\n  - { name: drain, type: exec, command: [/bin/true], prepare: true, filter: { types: [scheduled, approved, completed] } }\n  - { name: quiet, type: exec, command: [/bin/true], prepare: true }\n',
    );
    const r = await cli(['validate', '--config', path]);
    expect(r.code).toBe(0);
    expect(r.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^warning: sinks\[0\]\.filter\.types: this preparation \(prepare: true\) also runs for approved, completed, /),
    ]);
  });

  it('validate: takes the file from SE_BRIDGE_CONFIG, and names a missing one', async () => {
    const ok = await cli(['validate'], { SE_BRIDGE_CONFIG: 'config/demo.yaml' });
    expect(ok.code).toBe(0);
    const missing = await cli(['validate', '--config', join(dir.path, 'nope.yaml')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('nope.yaml: 1 configuration problem:\n  (file): cannot read: ENOENT');
  });

  it('without a configuration file, a verb names every place it looked, in order (exit 2); so does the relay', async () => {
    // a folder with no config/ of its own, and nothing in the environment
    const empty = join(dir.path, 'nowhere');
    mkdirSync(empty);
    const env = { ...process.env, SE_BRIDGE_CONFIG: '', SE_BRIDGE_RELAY_CONFIG: '', SE_BRIDGE_ENV_FILE: join(empty, 'none.env') };
    const bridge = ['$SE_BRIDGE_CONFIG: not set', `config/bridge.yaml: not found (in ${empty})`, `${INSTALLED_CONFIG}: not found`];
    const relay = ['$SE_BRIDGE_RELAY_CONFIG: not set', `config/relay.yaml: not found (in ${empty})`];
    const cases: [string[], string[]][] = [
      [['validate'], bridge],
      [['status'], bridge],
      [['fleet', 'status'], bridge],
      [['relay'], relay],
      [['validate', '--relay'], relay],
    ];
    for (const [verb, places] of cases) {
      const r = await command(process.execPath, [CLI, ...verb], { cwd: empty, env });
      expect([verb, r.code]).toEqual([verb, 2]);
      const looked = ['se-bridge: no configuration file; looked, in order, at:', '--config FILE: not given', ...places];
      expect(r.stderr).toContain(looked.join('\n  '));
    }
  });

  it('schema: prints the JSON Schema', async () => {
    const r = await cli(['schema']);
    expect(r.code).toBe(0);
    const schema = JSON.parse(r.stdout) as { title: string; properties: Record<string, unknown> };
    expect(schema.title).toBe('scheduled-events-bridge configuration');
    expect(Object.keys(schema.properties)).toEqual([
      'imds',
      'state',
      'sinks',
      'log',
      'identity',
      'approval',
      'server',
      'observability',
      'fleet',
      'calendar',
      'health',
    ]);
  });

  describe('status', () => {
    let trap: Server;
    let trapHits = 0;
    beforeAll(async () => {
      trap = createServer((_q, s) => {
        trapHits++;
        s.writeHead(502).end();
      });
      trap.on('connect', (_q, socket) => {
        trapHits++;
        socket.destroy();
      });
      await new Promise<void>((r) => trap.listen(0, '127.0.0.1', () => r()));
    });
    afterAll(() => new Promise<void>((r) => trap.close(() => r())));

    it('--json: one IMDS read, the events with time left, who this VM is; never through a proxy', async () => {
      const e = sim.addEvent({ EventType: 'Freeze', Resources: ['vm0', 'vm1'], DurationInSeconds: 5, noticeMs: 600_000 });
      const proxy = `http://127.0.0.1:${(trap.address() as AddressInfo).port}`;
      // NotBefore as IMDS says it (to the second), and the seconds left to it at a moment of the run
      const notBefore = Math.floor(sim.events[0]!.notBefore! / 1000) * 1000;
      const leftAt = (t: number) => Math.round((notBefore - t) / 1000);
      const started = Date.now();
      const r = await cli(['status', '--json', '--config', 'config/demo.yaml'], {
        SE_BRIDGE_IMDS_ENDPOINT: sim.url,
        HTTP_PROXY: proxy,
        HTTPS_PROXY: proxy,
        http_proxy: proxy,
        NODE_USE_ENV_PROXY: '1',
      });
      const ended = Date.now();
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout) as {
        vm: { name: string; origin: string };
        events: { eventId: string; secondsToNotBefore: number; affectsThisVm: boolean; thisVmIsLeader: boolean }[];
      };
      expect(out.vm).toMatchObject({ name: 'vm0', origin: 'imds' });
      expect(out.events).toHaveLength(1);
      expect(out.events[0]).toMatchObject({ eventId: e.eventId, affectsThisVm: true, thisVmIsLeader: true, approval: null });
      // counted from the moment of its read: between the command's start and its end
      expect(out.events[0]!.secondsToNotBefore).toBeLessThanOrEqual(leftAt(started));
      expect(out.events[0]!.secondsToNotBefore).toBeGreaterThanOrEqual(leftAt(ended));
      expect(trapHits).toBe(0);
      const table = await cli(['status', '--config', 'config/demo.yaml'], { SE_BRIDGE_IMDS_ENDPOINT: sim.url });
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/TYPE\s+STATUS\s+VMS \(\* = this VM\)/);
      expect(table.stdout).toMatch(/Freeze\s+Scheduled\s+vm0\*,vm1\s+.*not approved/);
      sim.removeEvent(e.eventId);
    });

    it('runs the health checks once and says what they find', async () => {
      const config = join(dir.path, 'health.yaml');
      const check = (code: number) =>
        writeFileSync(
          config,
          `state: { path: ${JSON.stringify(join(dir.path, 'health.db'))} }\nhealth:\n  exec: { command: [${JSON.stringify(process.execPath)}, "-e", "process.exit(${code})"] }\n`,
        );
      check(3);
      const table = await cli(['status', '--config', config], { SE_BRIDGE_IMDS_ENDPOINT: sim.url });
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/^Health checks: do not pass: .* exited 3$/m);
      check(0);
      const json = await cli(['status', '--json', '--config', config], { SE_BRIDGE_IMDS_ENDPOINT: sim.url });
      expect(JSON.parse(json.stdout)).toMatchObject({ health: { healthy: true, since: expect.any(String) } });
    });

    it('calendar: what it says now and the stretches ahead; status says it too', async () => {
      const config = calendarConfig('calendar', [
        '  timeZone: America/New_York',
        '  windows: [{ days: [mon, tue, wed, thu, fri], from: "22:00", to: "05:00" }]',
        '  blackouts: [{ name: weekend, days: [sat, sun] }]',
      ]);
      const r = await cli(['calendar', '--days', '8', '--json', '--config', config]);
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout) as { now: { timeZone: string }; stretches: { from: string; to: string | null; state: string }[] };
      expect(out.now.timeZone).toBe('America/New_York');
      // eight days hold every kind of stretch, each ending where the next begins
      expect(new Set(out.stretches.map((x) => x.state))).toEqual(new Set(['window', 'outside the windows', 'blackout weekend']));
      out.stretches.slice(0, -1).forEach((x, i) => expect(x.to).toBe(out.stretches[i + 1]!.from));
      expect(out.stretches.at(-1)!.to).toBeNull();
      const text = await cli(['calendar', '--config', config]);
      expect(text.stdout).toMatch(/^Calendar \(America\/New_York\): early approval (open|closed)/);
      // every row ends where it is said in both clocks: the zone's, with its offset, and UTC
      expect(text.stdout).toMatch(/^FROM \(America\/New_York\)\s+TO \(America\/New_York\)\s+FROM \(UTC\)\s+TO \(UTC\)\s+STATE$/m);
      expect(text.stdout).toMatch(
        /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} -0[45]:00\s+\d{4}-\d{2}-\d{2} \d{2}:\d{2} -0[45]:00\s+\d{4}-\d{2}-\d{2} \d{2}:\d{2}\s+\d{4}-\d{2}-\d{2} \d{2}:\d{2}\s+\S/m,
      );
      expect((await cli(['calendar', '--days', '0', '--config', config])).code).toBe(2);
      expect((await cli(['calendar', '--config', 'config/demo.yaml'])).stderr).toMatch(/no calendar is configured/);
      const status = await cli(['status', '--config', config], { SE_BRIDGE_IMDS_ENDPOINT: sim.url });
      expect(status.stdout).toMatch(/^Calendar \(America\/New_York\): early approval (open|closed)/m);
    });

    it('calendar --from: each row says its start and its end in the time zone, with the offset, and in UTC, across the night the clocks go back', async () => {
      const config = calendarConfig('calendar-berlin', [
        '  timeZone: Europe/Berlin',
        '  windows: [{ days: [sun], from: "02:30", to: "05:00" }]',
        '  blackouts: [{ name: nightly, from: "23:00", to: "01:00" }]',
      ]);
      // Saturday 24 and Sunday 25 October 2026: at 03:00 summer time the clocks go back to 02:00
      const r = await cli(['calendar', '--from', '2026-10-24', '--days', '2', '--json', '--config', config]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout) as {
        now: { timeZone: string; blackout: string | null };
        stretches: { from: string; to: string | null; localFrom: string; localTo: string | null; state: string }[];
      };
      expect(out.now).toMatchObject({ timeZone: 'Europe/Berlin', blackout: 'nightly' });
      const row = (from: string, to: string | null, localFrom: string, localTo: string | null, state: string) => ({
        ...{ from, to, localFrom, localTo, state },
      });
      expect(out.stretches).toEqual([
        row(
          '2026-10-23T22:00:00.000Z',
          '2026-10-23T23:00:00.000Z',
          '2026-10-24T00:00:00+02:00',
          '2026-10-24T01:00:00+02:00',
          'blackout nightly',
        ),
        row(
          '2026-10-23T23:00:00.000Z',
          '2026-10-24T21:00:00.000Z',
          '2026-10-24T01:00:00+02:00',
          '2026-10-24T23:00:00+02:00',
          'outside the windows',
        ),
        row(
          '2026-10-24T21:00:00.000Z',
          '2026-10-24T23:00:00.000Z',
          '2026-10-24T23:00:00+02:00',
          '2026-10-25T01:00:00+02:00',
          'blackout nightly',
        ),
        row(
          '2026-10-24T23:00:00.000Z',
          '2026-10-25T00:30:00.000Z',
          '2026-10-25T01:00:00+02:00',
          '2026-10-25T02:30:00+02:00',
          'outside the windows',
        ),
        // the window opens at the first 02:30 and closes at 05:00 winter time: three and a half hours
        row('2026-10-25T00:30:00.000Z', '2026-10-25T04:00:00.000Z', '2026-10-25T02:30:00+02:00', '2026-10-25T05:00:00+01:00', 'window'),
        row(
          '2026-10-25T04:00:00.000Z',
          '2026-10-25T22:00:00.000Z',
          '2026-10-25T05:00:00+01:00',
          '2026-10-25T23:00:00+01:00',
          'outside the windows',
        ),
        row('2026-10-25T22:00:00.000Z', null, '2026-10-25T23:00:00+01:00', null, 'blackout nightly'),
      ]);
      // each local time is the same instant as its UTC twin
      for (const x of out.stretches) {
        expect(Date.parse(x.localFrom)).toBe(Date.parse(x.from));
        if (x.to !== null) expect(Date.parse(x.localTo!)).toBe(Date.parse(x.to));
      }
      const text = await cli(['calendar', '--from', '2026-10-24', '--days', '2', '--config', config]);
      expect(text.code).toBe(0);
      const lines = text.stdout.split('\n');
      expect(lines[0]).toBe(
        'Calendar (Europe/Berlin) from 2026-10-24 00:00 +02:00: early approval closed: inside the blackout nightly until 2026-10-24 01:00 +02:00 (2026-10-23 23:00 UTC) (only a forced approval goes through)',
      );
      expect(lines[2]).toMatch(/^FROM \(Europe\/Berlin\)\s+TO \(Europe\/Berlin\)\s+FROM \(UTC\)\s+TO \(UTC\)\s+STATE$/);
      expect(lines).toContainEqual(
        expect.stringMatching(/^2026-10-25 02:30 \+02:00\s+2026-10-25 05:00 \+01:00\s+2026-10-25 00:30\s+2026-10-25 04:00\s+window$/),
      );
      expect(lines).toContainEqual(
        expect.stringMatching(/^2026-10-25 23:00 \+01:00\s+beyond 2 days\s+2026-10-25 22:00\s+beyond 2 days\s+blackout nightly$/),
      );
      // an instant with its offset starts there; anything else is refused
      const at = await cli(['calendar', '--from', '2026-10-25T00:30:00Z', '--days', '1', '--json', '--config', config]);
      expect(JSON.parse(at.stdout).stretches[0]).toMatchObject({ from: '2026-10-25T00:30:00.000Z', state: 'window' });
      for (const bad of ['2026-02-30', '2026-10-25T00:30:00']) {
        const refused = await cli(['calendar', '--from', bad, '--config', config]);
        expect(refused.code, bad).toBe(2);
        expect(refused.stderr, bad).toMatch(/^se-bridge calendar: --from /);
      }
    });

    it("calendar and status: a group's calendar (fleet.calendar) is the calendar", async () => {
      const config = withState('calendar-fleet', [
        'fleet:',
        '  group: g',
        '  store: { type: blob, accountUrl: "https://acct.blob.core.windows.net", container: se-bridge-fleet }',
        '  calendar: { timeZone: Australia/Lord_Howe, blackouts: [{ name: nightly, from: "23:00", to: "01:00" }] }',
      ]);
      const r = await cli(['calendar', '--from', '2026-10-04', '--days', '1', '--config', config]);
      expect(r.stderr).toBe('');
      expect(r.stdout.split('\n')[0]).toMatch(
        /^Calendar \(Australia\/Lord_Howe\) from 2026-10-04 00:00 \+10:30: early approval closed: inside the blackout nightly/,
      );
      // the clocks go forward half an hour at 02:00
      expect(r.stdout).toMatch(/^2026-10-04 01:00 \+10:30\s+2026-10-04 23:00 \+11:00\s+2026-10-03 14:30\s+2026-10-04 12:00\s+open$/m);
      const status = await cli(['status', '--config', config], { SE_BRIDGE_IMDS_ENDPOINT: sim.url });
      expect(status.stdout).toMatch(/^Calendar \(Australia\/Lord_Howe\): early approval (open|closed)/m);
    });

    it('validate: a day, a time or a time zone that does not exist is named by its path, exit 2', async () => {
      const config = calendarConfig('calendar-bad', [
        '  timeZone: EST',
        '  windows: [{ days: [mon], from: "22:00", to: "25:00" }]',
        '  blackouts: [{ name: leap, from: 2026-02-29, to: 2026-03-01 }, { name: april, from: 2026-04-31, to: 2026-05-01 }]',
      ]);
      const r = await cli(['validate', '--config', config]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('calendar.timeZone: "EST" is an abbreviation');
      expect(r.stderr).toContain('calendar.windows[0].to: 25:00 does not exist: the hours go from 00 to 23');
      expect(r.stderr).toContain('calendar.blackouts[0].from: 2026-02-29 does not exist: February 2026 has 28 days');
      expect(r.stderr).toContain('calendar.blackouts[1].from: 2026-04-31 does not exist: April 2026 has 30 days');
    });

    it('exits 1 with the error code when IMDS cannot be read', async () => {
      sim.injectFault({ kind: 'status', status: 400 });
      const r = await cli(['status', '--config', 'config/demo.yaml'], { SE_BRIDGE_IMDS_ENDPOINT: sim.url });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^se-bridge status: IMDS_BAD_REQUEST: IMDS answered 400/);
    });
  });

  it('dead-letters list and replay', async () => {
    const statePath = join(dir.path, 'dl', 'state.db');
    const store = Store.open(statePath);
    store.journal.commit({
      document: fixtureDocument('live-migration-1.json'),
      etag: null,
      observedAt: 't',
      events: [{ id: 'E/scheduled', eventId: 'E', transition: 'scheduled', json: '{"id":"E/scheduled"}', sinks: ['audit'] }],
    });
    store.outbox.deadLetter(store.outbox.due('audit', Date.now() + 1000, 1)[0]!.rowId, 12, 'gave up after 12 attempts: HTTP 503');
    store.close();
    const cfg = writeConfig(
      'dl.yaml',
      `state: { path: ${JSON.stringify(statePath)} }\nsinks: [{ name: audit, type: file, path: /dev/null }]\n`,
    );
    const list = await cli(['dead-letters', 'list', '--config', cfg]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/SINK\s+TRANSITION\s+EVENT ID\s+ATTEMPTS/);
    expect(list.stdout).toMatch(/audit\s+scheduled\s+E\s+12\s+\S+\s+gave up after 12 attempts: HTTP 503/);
    const json = await cli(['dead-letters', 'list', '--json', '--config', cfg]);
    expect((JSON.parse(json.stdout) as { ceId: string }[])[0]!.ceId).toBe('E/scheduled');
    const replay = await cli(['dead-letters', 'replay', '--sink', 'audit', '--config', cfg]);
    expect(replay.stdout).toBe('1 dead letter queued again for sink audit\n');
    expect((await cli(['dead-letters', 'list', '--config', cfg])).stdout).toBe('no dead letters\n');
    expect((await cli(['dead-letters', 'purge', '--config', cfg])).code).toBe(2);
    // read-only, and with no state database yet: nothing is made
    const nowhere = join(dir.path, 'none', 'state.db');
    const empty = writeConfig(
      'none.yaml',
      `state: { path: ${JSON.stringify(nowhere)} }\nsinks: [{ name: audit, type: file, path: /dev/null }]\n`,
    );
    const none = await cli(['dead-letters', 'list', '--config', empty]);
    expect(none).toMatchObject({ code: 0, stdout: `no dead letters (no state database at ${nowhere})\n` });
    expect((await cli(['dead-letters', 'list', '--json', '--config', empty])).stdout).toBe('[]\n');
    expect(existsSync(nowhere)).toBe(false);
    expect(existsSync(dirname(nowhere))).toBe(false);
  });

  it('run: exit 2 on a bad configuration, exit 1 when the state cannot be opened', async () => {
    const bad = await cli(['run', '--config', writeConfig('bad-run.yaml', 'sinks: 7\n')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('sinks: must be an array');
    writeFileSync(join(dir.path, 'plain-file'), '');
    const cfg = writeConfig('bad-state.yaml', `state: { path: ${JSON.stringify(join(dir.path, 'plain-file', 'state.db'))} }\n`);
    const r = await cli(['run', '--config', cfg], { SE_BRIDGE_IMDS_ENDPOINT: sim.url });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot open state database .*plain-file\/state\.db \(ENOTDIR: a part of .*plain-file is not a directory\)/);
  });

  it('approve: approves through the running daemon, then says it is already approved', async () => {
    const secret = `whsec_${Buffer.alloc(32, 6).toString('base64')}`;
    const port = await freePort();
    const cfg = writeConfig(
      'approve.yaml',
      [
        `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }`,
        `state: { path: ${JSON.stringify(join(dir.path, 'approve', 'state.db'))} }`,
        `approval: { secret: "${secret}" }`,
        `server: { listen: "127.0.0.1:${port}" }`,
      ].join('\n'),
    );
    const e = sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
    const child = start(['run', '--config', cfg]);
    try {
      await waitFor(
        () => child.out.stdout.includes('"event scheduled"') && child.out.stdout.includes('approval server listening'),
        'the daemon to see the event',
      );
      const first = await cli(['approve', e.eventId, '--config', cfg, '--reason', 'window']);
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      expect(first.stdout).toBe(`${e.eventId}: approved\n`);
      expect(sim.events.find((x) => x.eventId === e.eventId)!.status).toBe('Started');
      const again = await cli(['approve', e.eventId, '--config', cfg]);
      expect(again.code).toBe(0);
      expect(again.stdout).toMatch(/already approved by cli:\S+ \(api\)/);
      const status = await cli(['status', '--json', '--config', cfg]);
      const listed = (JSON.parse(status.stdout) as { events: { eventId: string; approval: { by: string; via: string } | null }[] }).events;
      expect(listed.find((x) => x.eventId === e.eventId)!.approval).toMatchObject({ by: expect.stringMatching(/^cli:/), via: 'api' });
      const unknown = await cli(['approve', 'NO-SUCH-EVENT', '--config', cfg]);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toMatch(/404 UNKNOWN_EVENT/);
    } finally {
      child.kill('SIGTERM');
      await finished(child);
    }
    const noServer = await cli(['approve', 'X', '--config', 'config/demo.yaml']);
    expect(noServer.code).toBe(2);
    expect(noServer.stderr).toMatch(/approval.secret is not set/);
  });

  it('run: a managed identity gets its tokens from the configured IMDS endpoint, with no other setting', async () => {
    const app = createServer((req, res) => {
      const token = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
      const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8') || 'null') as { aud?: string } | null;
      seen.push(claims?.aud ?? 'none');
      res.writeHead(claims?.aud === 'api://cli-test' ? 204 : 401).end();
    });
    const seen: string[] = [];
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', () => r()));
    const cfg = writeConfig(
      'identity.yaml',
      [
        `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }`,
        `state: { path: ${JSON.stringify(join(dir.path, 'identity', 'state.db'))} }`,
        'observability: { listen: "off" }',
        'sinks:',
        `  - { name: app, type: webhook, url: "http://127.0.0.1:${(app.address() as AddressInfo).port}/hook", auth: { kind: managedIdentity, scope: "api://cli-test/.default" } }`,
      ].join('\n'),
    );
    const before = sim.identities.requests.length;
    const child = start(['run', '--config', cfg], { AZURE_POD_IDENTITY_AUTHORITY_HOST: '' });
    try {
      sim.addEvent({ noticeMs: 600_000 });
      await waitFor(() => seen.includes('api://cli-test'), 'a request with the token');
      expect(child.out.stdout).toContain('"code":"TOKEN_ENDPOINT"');
      expect(sim.identities.requests.slice(before)).toContainEqual(
        expect.objectContaining({ resource: 'api://cli-test', asked: 'system', status: 200 }),
      );
    } finally {
      child.kill('SIGTERM');
      await finished(child);
      await new Promise((r) => app.close(r));
    }
  });

  it('run: a second signal exits at once with 130, even while a delivery hangs', async () => {
    const { HttpPeer } = await import('../../testkit/http-peer.ts');
    const hang = new HttpPeer();
    hang.answer = () => ({ hang: true });
    await hang.listen();
    const cfg = writeConfig(
      'hang.yaml',
      `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }\nstate: { path: ${JSON.stringify(join(dir.path, 'hang', 'state.db'))} }\nsinks: [{ name: h, type: webhook, url: ${hang.url}, delivery: { timeoutMs: 600000 } }]\nobservability: { listen: "off" }\n`,
    );
    const e = sim.addEvent({ noticeMs: 600_000 });
    const child = start(['run', '--config', cfg]);
    try {
      await waitFor(() => hang.requests.length === 1, 'the delivery to hang');
      child.kill('SIGTERM');
      await waitFor(() => child.out.stdout.includes('"shutting down"'), 'the shutdown to begin');
      child.kill('SIGTERM');
      const r = await finished(child, 5000);
      expect(r.code).toBe(130);
      expect(r.stderr).toContain('second SIGTERM; exiting now');
    } finally {
      sim.removeEvent(e.eventId);
      await hang.close();
    }
  });

  it('run: stops cleanly on SIGTERM with exit 0', async () => {
    const cfg = writeConfig(
      'run.yaml',
      `imds: { endpoint: ${sim.url}, pollIntervalMs: 200 }\nstate: { path: ${JSON.stringify(join(dir.path, 'run', 'state.db'))} }\nsinks: [{ name: audit, type: file, path: ${JSON.stringify(join(dir.path, 'run', 'events.jsonl'))} }]\n`,
    );
    const child = start(['run', '--config', cfg]);
    await waitFor(() => child.out.stdout.includes('bridge starting'), 'the bridge to start');
    const mark = sim.requests.length;
    await waitFor(() => sim.requests.length > mark, 'a poll');
    child.kill('SIGTERM');
    const r = await finished(child);
    expect(r.code).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string; level: string });
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['bridge starting', 'shutting down', 'bridge stopped']));
    expect(lines.every((l) => typeof l.level === 'string')).toBe(true);
  });
});
