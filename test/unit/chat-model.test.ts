/** The chat message model (src/present/chat-model.ts) every chat sink renders: what a person reads of each event. */
import { describe, expect, it } from 'vitest';
import { toChatMessage } from '../../src/present/chat-model.ts';
import { ce } from '../../testkit/chat-sinks.ts';

describe('chat message model', () => {
  it.each<[Record<string, unknown>, string, string, string]>([
    [{}, 'scheduled', 'vm0 will be paused for about 5s', 'warning'],
    [{ EventType: 'Reboot', DurationInSeconds: -1 }, 'scheduled', 'vm0 will be rebooted', 'high'],
    [{ EventType: 'Redeploy' }, 'scheduled', 'vm0 will be moved to another host (temporary disk lost)', 'high'],
    [{ EventType: 'Preempt' }, 'scheduled', 'vm0 will be evicted (Spot)', 'critical'],
    [{ EventType: 'Terminate' }, 'scheduled', 'vm0 will be deleted', 'critical'],
    [{ EventType: 'Reboot' }, 'started', 'vm0 is rebooting', 'high'],
    [{}, 'completed', 'vm0: maintenance finished (Freeze)', 'resolved'],
    [{ Resources: ['vm7', 'vm8'] }, 'scheduled', 'vm7 and 1 more will be paused for about 5s', 'info'],
  ])('%j %s -> "%s" (%s)', (over, kind, title, severity) => {
    const m = toChatMessage(ce(kind as 'scheduled', over));
    expect(m.title).toBe(title);
    expect(m.severity).toBe(severity);
  });

  it('ranks Preempt/Terminate/Redeploy/Reboot above Freeze, and Started above Scheduled', () => {
    const rank = (t: string, k: 'scheduled' | 'started' = 'scheduled') => toChatMessage(ce(k, { EventType: t })).rank;
    expect(rank('Preempt')).toBeGreaterThan(rank('Redeploy'));
    expect(rank('Redeploy')).toBeGreaterThan(rank('Reboot'));
    expect(rank('Reboot')).toBeGreaterThan(rank('Freeze'));
    expect(rank('Freeze', 'started')).toBeGreaterThan(rank('Freeze'));
  });

  it('gives NotBefore as UTC with the time left, marks this VM, and offers Approve only for a Scheduled event', () => {
    const m = toChatMessage(ce('scheduled'), { approveUrl: 'https://bridge.example/v1/approve?token=t' });
    expect(m.notBefore).toEqual({ iso: '2026-11-22T05:15:00Z', epoch: Date.parse('2026-11-22T05:15:00Z') / 1000, timeLeft: 'in 15m 0s' });
    expect(m.vms).toEqual([
      { name: 'vm0', isThisVm: true },
      { name: 'vm1', isThisVm: false },
    ]);
    expect(m.approveUrl).toBe('https://bridge.example/v1/approve?token=t');
    expect(toChatMessage(ce('started'), { approveUrl: 'https://x' }).approveUrl).toBeNull();
  });
});
