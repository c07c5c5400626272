/**
 * The calendar (`calendar`, or `fleet.calendar`): when early approval is allowed. Windows (early
 * approval by a rule with `within: windows` only inside them) and blackouts (no early approval
 * at all, except a person's forced one), in one IANA time zone. Wall-clock times are "HH:MM"
 * (`to` may be "24:00"); a window whose `to` is earlier than its `from` crosses midnight and
 * belongs to the day it opens; a blackout is either a run of whole dates (both ends included) or
 * a recurring time on some days of the week or of the month.
 */
import { z } from 'zod';
import { zoneProblem } from './zone.ts';

export const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;

const clock = (what: string, max24: boolean) =>
  z
    .string()
    .regex(
      max24 ? /^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$/ : /^([01][0-9]|2[0-3]):[0-5][0-9]$/,
      `must be "HH:MM"${max24 ? ' (up to "24:00")' : ''}`,
    )
    .describe(what);

/** minutesOf: "HH:MM" as minutes since midnight. */
export const minutesOf = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

const dayList = z.array(z.enum(DAYS, { message: `must be one of ${DAYS.join(', ')}` })).min(1);

const Window = z
  .strictObject({
    days: dayList.describe('The days it opens on (mon … sun).'),
    from: clock('When it opens, local time.', false),
    to: clock('When it closes, local time ("24:00": midnight); earlier than from: the next day.', true),
  })
  .refine((w) => w.from !== w.to, { message: 'from and to are the same time: say "00:00" to "24:00" for a whole day', path: ['to'] });

/** A date or a time as written (YAML may have read a date as a Date already). */
const text = z.preprocess((v) => (v instanceof Date ? v.toISOString().slice(0, 10) : v), z.string());

/** isDate: "YYYY-MM-DD", a day that exists. */
export const isDate = (d: string): boolean =>
  /^\d{4}-\d{2}-\d{2}$/.test(d) && !Number.isNaN(Date.parse(`${d}T00:00:00Z`)) && new Date(`${d}T00:00:00Z`).toISOString().startsWith(d);

const Blackout = z
  .strictObject({
    name: z.string().min(1).max(64).describe('Its name, in logs, answers and the calendar.conflict CloudEvent.'),
    days: dayList.optional().describe('Recurring on these days of the week (with from and to as times).'),
    monthDays: z
      .array(z.number().int().min(1).max(31))
      .min(1)
      .optional()
      .describe('Recurring on these days of the month (with from and to as times).'),
    from: text.optional().describe('A date (YYYY-MM-DD), or with days or monthDays a time (HH:MM; default "00:00").'),
    to: text.optional().describe('A date, both ends included, or with days or monthDays a time (up to "24:00", the default).'),
  })
  .superRefine((b, ctx) => {
    const recurring = b.days !== undefined || b.monthDays !== undefined;
    if (b.days !== undefined && b.monthDays !== undefined)
      ctx.addIssue({ code: 'custom', path: ['monthDays'], message: 'either days or monthDays, not both' });
    if (recurring) {
      const from = b.from ?? '00:00';
      const to = b.to ?? '24:00';
      if (!/^([01][0-9]|2[0-3]):[0-5][0-9]$/.test(from))
        ctx.addIssue({ code: 'custom', path: ['from'], message: 'must be "HH:MM" with days or monthDays' });
      else if (!/^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$/.test(to))
        ctx.addIssue({ code: 'custom', path: ['to'], message: 'must be "HH:MM" (up to "24:00") with days or monthDays' });
      else if (minutesOf(from) >= minutesOf(to))
        ctx.addIssue({ code: 'custom', path: ['to'], message: `must be later than from (${from})` });
      return;
    }
    for (const key of ['from', 'to'] as const) {
      const v = b[key];
      if (v === undefined || !isDate(v))
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: 'must be a date, YYYY-MM-DD (or give days or monthDays for a recurring blackout)',
        });
    }
    if (b.from !== undefined && b.to !== undefined && isDate(b.from) && isDate(b.to) && b.from > b.to)
      ctx.addIssue({ code: 'custom', path: ['from'], message: `is after to (${b.to})` });
  });
export type Blackout = z.infer<typeof Blackout>;

export const CalendarConfig = z
  .strictObject({
    timeZone: z
      .string()
      .default('UTC')
      .superRefine((tz, ctx) => {
        const problem = zoneProblem(tz);
        if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
      })
      .describe(
        'The IANA time zone of every time here (Europe/Oslo, America/New_York, UTC); daylight saving as the platform computes it. Abbreviations (EST, CET) and offsets (+01:00) are refused.',
      ),
    windows: z.array(Window).default([]).describe('Early approval by a rule with `within: windows` only inside these (none: any time).'),
    blackouts: z
      .array(Blackout)
      .default([])
      .describe('No early approval inside these, whatever a rule says; only a person forcing it, with a reason.'),
  })
  .superRefine(
    (c, ctx) => {
      const seen = new Map<string, number>();
      (Array.isArray(c.blackouts) ? c.blackouts : []).forEach((b, i) => {
        if (typeof b?.name !== 'string') return;
        const first = seen.get(b.name);
        if (first !== undefined)
          ctx.addIssue({ code: 'custom', path: ['blackouts', i, 'name'], message: `"${b.name}" is the name of blackouts[${first}] too` });
        else seen.set(b.name, i);
      });
      // said with every other problem, not only once the rest is right
    },
    { when: () => true },
  );
export type CalendarConfig = z.infer<typeof CalendarConfig>;
