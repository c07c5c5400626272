import { describe, expect, it } from 'vitest';
import { matchesFilter } from '../../src/pipeline/filter.ts';
import { FilterConfig } from '../../src/sinks/contract.ts';
import { formatEventLine, humanDuration, timeLeft } from '../../src/present/text-line.ts';
import { toCloudEvent } from '../../src/pipeline/cloudevent.ts';
import { diff } from '../../src/pipeline/diff.ts';
import { identityFrom } from '../../src/imds/identity.ts';
import { fixtureDocument } from '../helpers.ts';

const subject = { transition: 'scheduled', eventType: 'Freeze', eventSource: 'Platform', resources: ['vm-a', 'vm-b'] };

describe('matchesFilter', () => {
  it.each<[string, Record<string, unknown>, string, boolean]>([
    ['empty filter passes everything', {}, 'vm-z', true],
    ['types includes the transition', { types: ['scheduled', 'started'] }, 'vm-z', true],
    ['types excludes the transition', { types: ['completed'] }, 'vm-z', false],
    ['eventTypes includes Freeze', { eventTypes: ['Freeze'] }, 'vm-z', true],
    ['eventTypes excludes Freeze', { eventTypes: ['Reboot', 'Redeploy'] }, 'vm-z', false],
    ['eventSources includes Platform', { eventSources: ['Platform'] }, 'vm-z', true],
    ['eventSources excludes Platform', { eventSources: ['User'] }, 'vm-z', false],
    ['scope self, this VM listed', { scope: 'self' }, 'vm-b', true],
    ['scope self, case-insensitive', { scope: 'self' }, 'VM-B', true],
    ['scope self, this VM not listed', { scope: 'self' }, 'vm-z', false],
    ['scope leader, first listed', { scope: 'leader' }, 'vm-a', true],
    ['scope leader, listed but not first', { scope: 'leader' }, 'vm-b', false],
    ['all conditions must hold', { types: ['scheduled'], eventTypes: ['Reboot'] }, 'vm-a', false],
  ])('%s', (_name, filter, vm, expected) => {
    expect(matchesFilter(FilterConfig.parse(filter), subject, vm)).toBe(expected);
  });
});

describe('text line', () => {
  it('says what, which VMs (this one starred), when and for how long', () => {
    const [t] = diff(fixtureDocument('live-migration-1.json'), fixtureDocument('live-migration-2.json'));
    const e = toCloudEvent(t!, { vm: identityFrom(null, { name: 'WestNO_1' }), observedAt: '2022-04-11T22:11:58.000Z' });
    expect(formatEventLine(e)).toBe(
      '2022-04-11T22:11:58Z  SCHEDULED  Freeze     C7061BAC-AFDC-4513-B24B-AA5F13A16123  vms=WestNO_0,WestNO_1*  status=Scheduled  source=Platform  ' +
        'notBefore=2022-04-11T22:26:58Z (in 15m 0s)  duration=5s  "Virtual machine is being paused because of a memory-preserving Live Migration operation."',
    );
  });

  it.each([
    [0, '0s'],
    [59_400, '59s'],
    [61_000, '1m 1s'],
    [3 * 3600_000 + 120_000, '3h 2m'],
    [3 * 86400_000 + 3600_000, '3d 1h'],
  ])('humanDuration(%i) = %s', (ms, text) => {
    expect(humanDuration(ms)).toBe(text);
  });

  it('speaks of the past too', () => {
    expect(timeLeft('2020-01-01T00:00:00Z', '2020-01-01T00:01:00Z')).toBe('1m 0s ago');
    expect(timeLeft('nonsense', '2020-01-01T00:01:00Z')).toBe('unknown');
  });
});
