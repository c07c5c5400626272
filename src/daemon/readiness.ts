/**
 * readiness: what /readyz says. Ready: IMDS answered well at least once, fewer reads than the
 * threshold failed in a row since, and this VM knows its name. The details: the preparations of
 * the pending events, and each feature's state under its name.
 */
import type { Readiness } from '../observability/server.ts';
import type { BridgeState } from '../imds/view.ts';
import type { PollLoop } from './poll-loop.ts';
import type { Preparations } from './preparations.ts';
import type { Feature } from './feature.ts';

export interface ReadinessSources {
  readonly state: BridgeState;
  readonly poll: PollLoop;
  readonly failureThreshold: number;
  readonly preparations: Preparations;
  readonly features: readonly Feature[];
}

/** isReady: the verdict alone. */
export const isReady = (s: ReadinessSources): boolean =>
  s.state.goodReads > 0 && s.poll.failures < s.failureThreshold && s.state.vm.nameKnown;

export function readiness(s: ReadinessSources): Readiness {
  const ready = isReady(s);
  const details: Record<string, unknown> = {};
  if (s.preparations.any) details.preparations = s.preparations.ofPending(s.state);
  for (const f of s.features) {
    const d = f.details?.() ?? null;
    if (d !== null) details[f.name] = d;
  }
  const reason = s.state.vm.nameKnown
    ? s.poll.reason(ready)
    : `this VM does not know its name yet (IMDS instance metadata could not be read; ${s.state.vm.name} is the host name): every event is treated as its own`;
  return { ready, reason, ...(Object.keys(details).length > 0 ? { details } : {}) };
}
