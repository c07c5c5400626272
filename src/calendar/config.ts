/**
 * The calendar (`calendar`, or `fleet.calendar`): when early approval is allowed. Windows (early
 * approval by a rule with `within: windows` only inside them) and blackouts (no early approval
 * at all, except a person's forced one), in one IANA time zone. Wall-clock times are "HH:MM"
 * (`to` may be "24:00"); a window or a blackout whose `to` is earlier than its `from` crosses
 * midnight and belongs to the day it opens. A blackout is a run of whole dates (both ends
 * included), a time of day (every day, or on some days of the week or of the month), or a
 * stretch of the week ("fri 22:00" to "mon 06:00").
 */
import { z } from 'zod';
import { blackoutProblems, clockProblem, DAYS } from './forms.ts';
import { zoneProblem } from './zone.ts';

/** clock: "HH:MM" of a day that has it (up to "24:00" when `end`); the pattern is for editors, the message says what is wrong. */
const clock = (what: string, end: boolean) =>
  z
    .string()
    .regex(end ? /^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$/ : /^([01][0-9]|2[0-3]):[0-5][0-9]$/, {
      error: (issue) => clockProblem(String(issue.input), end) ?? 'must be "HH:MM"',
    })
    .describe(what);

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

const Blackout = z
  .strictObject({
    name: z.string().min(1).max(64).describe('Its name, in logs, answers and the calendar.conflict CloudEvent.'),
    days: dayList.optional().describe('Recurring on these days of the week (with from and to as times).'),
    monthDays: z
      .array(z.number().int().min(1).max(31))
      .min(1)
      .optional()
      .describe('Recurring on these days of the month (with from and to as times); a month without that day skips it.'),
    from: text
      .optional()
      .describe(
        'A date (YYYY-MM-DD); or a time (HH:MM): every day, or with days or monthDays on those (default "00:00"); or a day of the week and a time ("fri 22:00").',
      ),
    to: text
      .optional()
      .describe(
        'As from: a date, both ends included; a time (up to "24:00", the default with days or monthDays; earlier than from: the next day); or a day of the week and a time ("mon 06:00").',
      ),
  })
  .superRefine((b, ctx) => {
    for (const [key, message] of blackoutProblems(b)) ctx.addIssue({ code: 'custom', path: key === null ? [] : [key], message });
  });

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
