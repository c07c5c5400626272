import { describe, expect, it } from 'vitest';
import { fullJitter, parseRetryAfter, spread } from '../../src/lib/time.ts';
import { retryPause } from '../../src/imds/retry.ts';
import { RateBudget } from '../../src/imds/rate-budget.ts';
import { waitFor } from '../helpers.ts';

describe('fullJitter', () => {
  it.each([
    [0, 0.999, 500, 60_000, 499],
    [3, 0.999, 500, 60_000, 3996],
    [20, 0.999, 500, 60_000, 59_940],
    [80, 0.5, 500, 60_000, 30_000],
    [5, 0, 500, 60_000, 0],
  ])('attempt %i, random %f, base %i, cap %i -> %i ms', (attempt, r, base, cap, expected) => {
    expect(fullJitter(attempt, base, cap, () => r)).toBe(expected);
  });
});

describe('parseRetryAfter', () => {
  it.each([
    ['3', 3000],
    [' 0 ', 0],
    [['7', '9'], 7000],
    ['', undefined],
    [undefined, undefined],
    ['soon', undefined],
  ])('%j -> %j', (value, expected) => {
    expect(parseRetryAfter(value)).toBe(expected);
  });

  it('reads an HTTP date relative to now', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now)).toBe(0);
  });
});

describe('RateBudget', () => {
  it('never lets more than the limit through in any one-second window', async () => {
    // virtual time: the clock moves only when the budget sleeps, so every decision is exact
    let t = 0;
    const budget = new RateBudget(
      5,
      () => t,
      async (ms) => void (t += ms),
    );
    const stamps: number[] = [];
    for (let i = 0; i < 12; i++) {
      await budget.acquire();
      stamps.push(t);
    }
    expect(stamps).toEqual([0, 0, 0, 0, 0, 1000, 1000, 1000, 1000, 1000, 2000, 2000]);
    // twelve callers at once, the clock standing still: five get through, the other seven all wait
    let waiting = 0;
    const shared = new RateBudget(
      5,
      () => 0,
      () => ((waiting += 1), new Promise<void>(() => {})),
    );
    let through = 0;
    for (let i = 0; i < 12; i++) void shared.acquire().then(() => (through += 1));
    await waitFor(() => waiting === 7, 'seven callers waiting');
    expect(through).toBe(5);
  });

  it('stops waiting when the signal aborts', async () => {
    const budget = new RateBudget(1);
    await budget.acquire();
    const ac = new AbortController();
    const waiting = budget.acquire(ac.signal);
    ac.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
  });
});

describe('retryPause (the poll loop after failed IMDS reads)', () => {
  const o = { intervalMs: 1000, maxPauseMs: 5000 };
  it('never exceeds the cap, however many failures, even at the top of the jitter', () => {
    for (let failures = 1; failures <= 200; failures++) {
      expect(retryPause(failures, o, () => 0.999_999)).toBeLessThanOrEqual(5000);
      expect(retryPause(failures, o, () => 0)).toBe(1000);
    }
    expect(retryPause(10, o, () => 0.999_999)).toBe(4999);
  });
  it('honours Retry-After up to the cap', () => {
    expect(retryPause(1, { ...o, retryAfterMs: 3000 }, () => 0)).toBe(3000);
    expect(retryPause(1, { ...o, retryAfterMs: 120_000 }, () => 0)).toBe(5000);
  });
  it('is never below the poll interval, even when the cap is', () => {
    expect(retryPause(30, { intervalMs: 10_000, maxPauseMs: 5000 }, () => 0.999)).toBe(10_000);
    expect(retryPause(1, { intervalMs: 10_000, maxPauseMs: 5000 }, () => 0)).toBe(10_000);
  });
});

describe('spread', () => {
  it('varies a period by up to the fraction either way, and covers the whole range', () => {
    expect(spread(30_000, 0.2, () => 0)).toBe(24_000);
    expect(spread(30_000, 0.2, () => 0.5)).toBe(30_000);
    expect(spread(30_000, 0.2, () => 0.999999)).toBe(36_000);
    const seen = Array.from({ length: 2000 }, () => spread(30_000, 0.2));
    expect(Math.min(...seen)).toBeGreaterThanOrEqual(24_000);
    expect(Math.max(...seen)).toBeLessThanOrEqual(36_000);
    // members started together drift apart: their periods are not all one value
    expect(new Set(seen).size).toBeGreaterThan(100);
  });
});
