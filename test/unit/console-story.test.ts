/**
 * An event's story on its console page: what its records say happened, in order, each with its
 * time; a time a member wrote that does not read is left out, and text of theirs stays text.
 */
import { describe, expect, it } from 'vitest';
import type { FleetEvent } from '../../src/fleet/view/events.ts';
import { eventPage, transitionsOf } from '../../src/relay/console-render.ts';

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
