/**
 * An event's story on its console page: what its records say happened, in order, each with its
 * time; a time a member wrote that does not read is left out, and text of theirs stays text. And
 * the maintenances that ended, on the timeline: drawn where they happened, with no page of their own.
 */
import { describe, expect, it } from 'vitest';
import type { FleetEvent } from '../../src/fleet/view/events.ts';
import { eventPage, timelineHtml, transitionsOf } from '../../src/relay/console-render.ts';
import { timelineOf } from '../../src/relay/console-timeline.ts';
import { snapshotOf } from '../../testkit/console.ts';

const event = (over: Partial<FleetEvent> = {}): FleetEvent => ({
  ...{ group: 'web', vm: 'web-0', resourceId: null, eventId: 'E1', eventType: 'Reboot', status: 'Started' },
  ...{ notBefore: '2026-11-30T11:00:00.000Z', durationInSeconds: -1, member: 'fresh', heartbeatAt: '2026-11-30T11:01:00.000Z' },
  ...over,
});

describe("an event's story", () => {
  it('says its transitions in the order they happened, with their times', () => {
    const e = event({
      seen: { scheduled: '2026-11-30T10:00:00.000Z', started: '2026-11-30T10:31:00.000Z' },
      held: { since: '2026-11-30T10:05:00.000Z', by: ['web-1'] },
      approval: { by: 'Ada Lovelace', via: 'console', at: '2026-11-30T10:30:00Z' },
    });
    expect(transitionsOf(e)).toEqual([
      ['2026-11-30T10:00:00.000Z', 'listed by its member (Scheduled)'],
      ['2026-11-30T10:05:00.000Z', 'held by the budget'],
      ['2026-11-30T10:30:00.000Z', 'approved by Ada Lovelace via console'],
      ['2026-11-30T10:31:00.000Z', 'Started, as its member saw it'],
    ]);
    const page = eventPage(e, false);
    expect(page).toContain(
      '<h2>What happened</h2><ol class="story"><li><time datetime="2026-11-30T10:00:00.000Z">30 Nov 10:00 UTC</time> listed by its member (Scheduled)</li>',
    );
  });

  it('leaves out a time that does not read, and shows none when nothing has one', () => {
    const e = event({
      seen: { scheduled: 'yesterday <script>', started: '2026-11-30T10:31:00Z' },
      approval: { by: '<b>x</b>', via: 'api', at: 'never' },
    });
    expect(transitionsOf(e)).toEqual([['2026-11-30T10:31:00.000Z', 'Started, as its member saw it']]);
    expect(eventPage(e, false)).not.toContain('<b>x</b>');
    expect(eventPage(event(), false)).not.toContain('What happened');
  });
});

describe('ended maintenances on the timeline', () => {
  const NOW = Date.parse('2026-11-30T10:00:00Z');
  const member = {
    ...{ vm: 'web-0', resourceId: null, events: [], holdsSlot: false, heartbeatAt: '2026-11-30T09:59:00.000Z', heartbeatSeconds: 30 },
    stale: false,
    ended: [
      {
        eventId: 'E1',
        eventType: 'Reboot',
        status: 'Completed' as const,
        at: '2026-11-30T09:40:00.000Z',
        notBefore: '2026-11-30T09:30:00.000Z',
        durationInSeconds: -1,
      },
      {
        eventId: 'E2',
        eventType: 'Freeze',
        status: 'Canceled' as const,
        at: '2026-11-30T09:00:00.000Z',
        notBefore: '2026-11-30T11:00:00.000Z',
        durationInSeconds: 5,
      },
      // ended long before the range: not drawn
      {
        eventId: 'E3',
        eventType: 'Reboot',
        status: 'Completed' as const,
        at: '2026-11-29T01:00:00.000Z',
        notBefore: null,
        durationInSeconds: -1,
      },
    ],
  };

  it('draws a completed one up to when it ended and a canceled one where it was planned, as bars with no page', () => {
    const t = timelineOf(snapshotOf({ web: [member] }, NOW), [], NOW, '24h');
    const bars = t.lanes[0]!.rows[0]!.bars.map((b) => [b.eventId, b.state, b.startsAt, b.endsAt, b.approvable]);
    expect(bars).toEqual([
      ['E1', 'completed', '2026-11-30T09:30:00.000Z', '2026-11-30T09:40:00.000Z', false],
      ['E2', 'canceled', '2026-11-30T11:00:00.000Z', '2026-11-30T11:00:05.000Z', false],
    ]);
    const html = timelineHtml(t, true);
    expect(html).toContain('<span class="bar s-completed" data-from=');
    expect(html).toContain('<span class="bar s-canceled" data-from=');
    expect(html).not.toContain('id=E1');
    expect(html).not.toContain('Approve web-0');
  });
});
