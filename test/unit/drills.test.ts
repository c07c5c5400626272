import { describe, expect, it } from 'vitest';
import { DrillRefused, Drills, type DrillRequest } from '../../src/drill/drills.ts';
import { isDrill } from '../../src/imds/drill-id.ts';
import { chmodSync, existsSync, lstatSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { controlPath } from '../../src/control/server.ts';
import { ControlServer } from '../../src/drill/control.ts';
import { DrillLog } from '../../src/drill/report.ts';
import { captureLogger, tempDir } from '../helpers.ts';
import type { EventsDocument, ScheduledEvent } from '../../src/imds/wire.ts';
import { diff } from '../../src/pipeline/diff.ts';

const REQUEST: DrillRequest = {
  type: 'Reboot',
  noticeMs: 60_000,
  durationMs: 30_000,
  source: 'Platform',
  sinks: null,
  prepare: 'rehearse',
  end: 'complete',
};
const EMPTY: EventsDocument = { incarnation: 3, events: [] };
const real = (resources: string[]): ScheduledEvent => ({
  eventId: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123',
  eventType: 'Freeze',
  eventStatus: 'Scheduled',
  resourceType: 'VirtualMachine',
  resources,
  notBefore: null,
  description: '',
  eventSource: 'Platform',
  durationInSeconds: 5,
  raw: {},
});

/** play reads `reads` documents at the given times and returns the transitions each read makes. */
function clocked() {
  let now = 1_000_000;
  const drills = new Drills(() => now);
  let last: EventsDocument | null = null;
  const read = (doc: EventsDocument = EMPTY) => {
    const next = drills.overlay(doc, 'vm0');
    const kinds = diff(last, next).map((t) => `${t.kind}${isDrill(t.event.eventId) ? '' : ':real'}`);
    last = next;
    return kinds;
  };
  return { drills, read, at: (ms: number) => (now = 1_000_000 + ms) };
}

describe('drills', () => {
  it('is listed Scheduled with NotBefore its notice ahead, Started at NotBefore, gone (completed) after its duration', () => {
    const c = clocked();
    const d = c.drills.start(REQUEST, 'vm0', []);
    expect(d.eventId).toMatch(/^drill-[0-9a-f-]{36}$/);
    expect(c.read()).toEqual(['scheduled']);
    const listed = c.drills.overlay(EMPTY, 'vm0').events[0]!;
    expect(listed).toMatchObject({
      eventType: 'Reboot',
      eventStatus: 'Scheduled',
      resources: ['vm0'],
      eventSource: 'Platform',
      durationInSeconds: 30,
    });
    expect(Date.parse(listed.notBefore!)).toBe(Math.floor((1_000_000 + 60_000) / 1000) * 1000);
    c.at(59_000);
    expect(c.read()).toEqual([]);
    c.at(60_000);
    expect(c.read()).toEqual(['started']);
    c.at(89_000);
    expect(c.read()).toEqual([]);
    c.at(90_000);
    expect(c.read()).toEqual(['completed']);
    expect(c.drills.current()).toMatchObject({ ended: 'completed', startedAt: 1_060_000, endedAt: 1_090_000 });
    expect(c.drills.active).toBe(false);
  });

  it('starts at the read after its approval; with end: cancel it is canceled instead, while Scheduled', () => {
    const c = clocked();
    const d = c.drills.start(REQUEST, 'vm0', []);
    c.read();
    expect(c.drills.approved(d.eventId)).toBe(true);
    expect(c.drills.approved('C7061BAC-AFDC-4513-B24B-AA5F13A16123'), 'a real EventId is posted').toBe(false);
    c.at(1000);
    expect(c.read()).toEqual(['started']);

    const k = clocked();
    k.drills.start({ ...REQUEST, end: 'cancel' }, 'vm0', []);
    expect(k.read()).toEqual(['scheduled']);
    k.at(60_000);
    expect(k.read()).toEqual(['canceled']);
    expect(k.drills.current()!.ended).toBe('canceled');
  });

  it('with no notice it is still listed Scheduled once before it starts', () => {
    const c = clocked();
    c.drills.start({ ...REQUEST, noticeMs: 0 }, 'vm0', []);
    expect(c.read()).toEqual(['scheduled']);
    expect(c.read()).toEqual(['started']);
  });

  it('ends at once when a real event for this VM is listed, in that very read; never starts while one is pending, nor two at once', () => {
    const c = clocked();
    c.drills.start(REQUEST, 'vm0', []);
    expect(() => c.drills.start(REQUEST, 'vm0', [])).toThrow(DrillRefused);
    c.read();
    // another VM's event does not end it
    expect(c.read({ incarnation: 4, events: [real(['vm1'])] })).toEqual(['scheduled:real']);
    expect(c.drills.active).toBe(true);
    expect(c.read({ incarnation: 5, events: [real(['vm1', 'vm0'])] }).sort()).toEqual(['canceled', 'updated:real']);
    expect(c.drills.current()!.ended).toBe('ended by a real event');
    expect(() => c.drills.start(REQUEST, 'vm0', [real(['vm0'])])).toThrow(/a real event is pending for this VM \(Freeze C7061BAC/);
  });

  it('asks for a whole read while it plays and once after it changed', () => {
    const c = clocked();
    expect(c.drills.stale).toBe(false);
    c.drills.start(REQUEST, 'vm0', []);
    expect(c.drills.stale).toBe(true);
    c.read();
    expect(c.drills.stale).toBe(false);
    expect(c.drills.active).toBe(true);
    c.drills.endNow();
    expect(c.drills.stale).toBe(true);
    expect(c.read()).toEqual(['canceled']);
    expect(c.drills.stale).toBe(false);
  });
});

describe('the control channel’s address', () => {
  it('is <state>.sock beside each state (two daemons in one folder never meet), a pipe named after it on Windows', () => {
    expect(controlPath('/var/lib/se-bridge/state.db', 'linux')).toBe('/var/lib/se-bridge/state.db.sock');
    expect(controlPath('/srv/a/state-0.db', 'linux')).not.toBe(controlPath('/srv/a/state-1.db', 'linux'));
    const long = `/srv/${'x'.repeat(120)}/state.db`;
    expect(controlPath(long, 'linux', 1000)).toMatch(/^.+\/se-bridge-1000\/[0-9a-f]{16}\.sock$/);
    expect(Buffer.byteLength(controlPath(long, 'linux'))).toBeLessThanOrEqual(107);
    expect(controlPath('C:\\ProgramData\\se-bridge\\state.db', 'win32')).toMatch(/^\\\\\.\\pipe\\se-bridge-[0-9a-f]{16}$/);
    expect(controlPath('C:\\ProgramData\\se-bridge\\state.db', 'win32')).not.toBe(
      controlPath('C:\\ProgramData\\se-bridge\\other.db', 'win32'),
    );
  });
});

describe('the control channel of a state path too long for a socket', () => {
  const uid = process.getuid?.() ?? 0;
  /** listen: a control server for a long state path, with the temporary folder at `tmp`; what it logged. */
  async function listen(tmp: string): Promise<{ lines: Record<string, unknown>[]; path: string }> {
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    try {
      const { logger, lines } = captureLogger();
      const statePath = join(tmp, 'x'.repeat(120), 'state.db');
      const path = controlPath(statePath, 'linux', uid);
      const server = new ControlServer({
        path,
        statePath,
        drills: new Drills(),
        log: new DrillLog(),
        vmName: () => 'vm0',
        listed: () => [],
        sinks: [],
        preparations: () => [],
        logger,
      });
      await server.start();
      await server.close();
      return { lines, path };
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
  }

  it.skipIf(process.platform === 'win32')(
    'listens in a private folder it makes (0700), and refuses one that others may enter, or that is not a folder',
    async () => {
      const dir = tempDir();
      try {
        const made = await listen(dir.path);
        expect(made.path).toBe(join(dir.path, `se-bridge-${uid}`, basename(made.path)));
        expect(lstatSync(dirname(made.path)).mode & 0o777).toBe(0o700);
        expect(made.lines.filter((l) => l.code === 'CONTROL_UNAVAILABLE')).toEqual([]);

        chmodSync(dirname(made.path), 0o777);
        const open = await listen(dir.path);
        expect(open.lines.find((l) => l.code === 'CONTROL_UNAVAILABLE')?.err).toMatch(
          /may be entered by others \(mode 777\); it must be 0700/,
        );

        rmSync(dirname(made.path), { recursive: true });
        mkdirSync(join(dir.path, 'elsewhere'), { mode: 0o700 });
        symlinkSync(join(dir.path, 'elsewhere'), dirname(made.path));
        const linked = await listen(dir.path);
        expect(linked.lines.find((l) => l.code === 'CONTROL_UNAVAILABLE')?.err).toMatch(/is not a folder/);
        expect(existsSync(join(dir.path, 'elsewhere', basename(made.path)))).toBe(false);
      } finally {
        dir.cleanup();
      }
    },
  );
});
