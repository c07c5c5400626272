/**
 * The drills on the daemon's control channel (src/control/):
 *
 *   POST /v1/drills            start one: {type, noticeSeconds, durationSeconds, source, sinks,
 *                              prepare, end}; 201 with the drill, 409 while one plays or a real
 *                              event is pending for this VM, 400 naming a bad field
 *   GET  /v1/drills/current    the drill and its report; 404 before the first
 *   POST /v1/drills/current/end  end the drill being played now
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ControlChannel, readJson } from '../control/server.ts';
import type { ScheduledEvent } from '../imds/wire.ts';
import { sendJson } from '../lib/http-server.ts';
import { DRILL_TYPES, DrillRefused, type Drills } from './drills.ts';
import type { DrillApproval, DrillLog, DrillPreparation, DrillReport } from './report.ts';

const MAX_BODY = 16 * 1024;

export const DrillBody = z.strictObject({
  type: z.enum(DRILL_TYPES).default('Reboot'),
  noticeSeconds: z
    .number()
    .min(0)
    .max(24 * 3600)
    .default(60),
  durationSeconds: z
    .number()
    .min(0)
    .max(24 * 3600)
    .default(30),
  source: z.enum(['Platform', 'User']).default('Platform'),
  sinks: z.array(z.string().min(1)).nullable().default(null),
  prepare: z.enum(['rehearse', 'real']).default('rehearse'),
  end: z.enum(['complete', 'cancel']).default('complete'),
});

export interface ControlOptions {
  readonly path: string;
  /** The state database the channel is named after (its socket beside it, or in a private folder). */
  readonly statePath: string;
  readonly drills: Drills;
  readonly log: DrillLog;
  /** This VM's name, and the events IMDS lists now. */
  readonly vmName: () => string;
  readonly listed: () => readonly ScheduledEvent[];
  /** The configured sinks' names. */
  readonly sinks: readonly string[];
  /** The least notice a drill with real preparations needs for each sink that says (SinkModule.realDrillNotice). */
  readonly realNotice?: readonly { readonly sink: string; readonly seconds: number; readonly why: string }[];
  readonly preparations: (eventId: string) => readonly DrillPreparation[];
  /** The approval recorded for a drill, if any (the report shows who approved it and how). */
  readonly approval?: (eventId: string) => DrillApproval | null;
  readonly logger: Logger;
}

export class ControlServer {
  readonly #o: ControlOptions;
  readonly #channel: ControlChannel;

  /** tooShort: why a real drill with this notice would hurry a preparation, or null when the notice covers them all. */
  #tooShort(noticeSeconds: number, sinks: readonly string[] | null): string | null {
    const needed = (this.#o.realNotice ?? []).filter((n) => sinks === null || sinks.includes(n.sink));
    const most = needed.reduce<(typeof needed)[number] | null>((a, n) => (a === null || n.seconds > a.seconds ? n : a), null);
    if (most === null || noticeSeconds >= most.seconds) return null;
    return `--prepare real needs --notice ${most.seconds}s at least for sink ${most.sink}: ${most.why}; with ${noticeSeconds} s it would be hurried (rehearse instead, or give more notice)`;
  }

  constructor(options: ControlOptions) {
    this.#o = options;
    options.drills.onChange((d) => {
      if (d.ended !== null) options.logger.info({ eventId: d.eventId, ended: d.ended, code: 'DRILL_ENDED' }, 'drill ended');
    });
    this.#channel = new ControlChannel(options);
    this.#channel.route('GET', '/v1/drills/current', async (_req, res) => {
      const report = this.report();
      return report === null
        ? sendJson(res, 404, { error: 'NO_DRILL', message: 'no drill was played since the daemon started' })
        : sendJson(res, 200, report);
    });
    this.#channel.route('POST', '/v1/drills/current/end', async (_req, res) => {
      const d = this.#o.drills.endNow();
      return d === null ? sendJson(res, 404, { error: 'NO_DRILL', message: 'no drill is being played' }) : sendJson(res, 200, { drill: d });
    });
    this.#channel.route('POST', '/v1/drills', (req, res) => this.#start(req, res));
  }

  /** start listens; a channel that cannot listen is logged, and the daemon runs on without drills. */
  start(): Promise<void> {
    return this.#channel.start();
  }

  close(): Promise<void> {
    return this.#channel.close();
  }

  report(): DrillReport | null {
    const d = this.#o.drills.current();
    if (d === null) return null;
    const approval = this.#o.approval?.(d.eventId) ?? null;
    if (approval !== null) this.#o.log.approved(d.eventId, approval);
    return this.#o.log.report(d, this.#o.preparations(d.eventId));
  }

  async #start(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJson(req, res, MAX_BODY);
    if (body === null) return;
    const parsed = DrillBody.safeParse(body.value);
    if (!parsed.success) {
      const i = parsed.error.issues[0]!;
      return sendJson(res, 400, { error: 'MALFORMED', message: `${i.path.join('.') || '(body)'}: ${i.message}` });
    }
    const b = parsed.data;
    const unknown = (b.sinks ?? []).filter((s) => !this.#o.sinks.includes(s));
    if (unknown.length > 0)
      return sendJson(res, 400, {
        error: 'UNKNOWN_SINK',
        message: `no sink is named ${unknown.join(', ')}; the sinks are ${this.#o.sinks.join(', ')}`,
      });
    // real preparations must be able to finish before the drill's NotBefore: refused up front, not hurried
    const short = b.prepare === 'real' ? this.#tooShort(b.noticeSeconds, b.sinks) : null;
    if (short !== null) return sendJson(res, 409, { error: 'DRILL_REFUSED', message: short });
    try {
      const request = {
        type: b.type,
        noticeMs: Math.round(b.noticeSeconds * 1000),
        durationMs: Math.round(b.durationSeconds * 1000),
        source: b.source,
        sinks: b.sinks,
        prepare: b.prepare,
        end: b.end,
      };
      const vmName = this.#o.vmName();
      const listed = this.#o.listed();
      // begin the log first: the drill's first change is logged from its first read
      const drill = this.#o.drills.start(request, vmName, listed, (eventId) => this.#o.log.begin(eventId));
      this.#o.logger.info({ eventId: drill.eventId, ...request, code: 'DRILL_STARTED' }, 'drill started');
      sendJson(res, 201, { drill });
    } catch (err) {
      if (err instanceof DrillRefused) return sendJson(res, err.status, { error: 'DRILL_REFUSED', message: err.message });
      throw err;
    }
  }
}
