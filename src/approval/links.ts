/**
 * approvalLinks builds what chat sinks show for an event the policy leaves to a human: a
 * signed token bound to the EventId, the VM and an expiry (NotBefore, or `linkTtlSeconds`
 * from now, whichever is sooner), and the approval page link that carries it.
 */
import type { VmIdentity } from '../imds/identity.ts';
import { toScheduledEvent, transitionOf, type BridgeEvent } from '../pipeline/cloudevent.ts';
import type { ApprovalLinks } from '../sinks/contract.ts';
import { decide, type Rule } from './policy.ts';
import { issueToken } from './signatures.ts';

export interface LinkOptions {
  /** The approval secret's key bytes. */
  readonly key: Buffer;
  readonly rules: readonly Rule[];
  readonly linkTtlSeconds: number;
  /** Where links point; null: at the approval server itself (fine on one machine). */
  readonly publicUrl: string | null;
  readonly slackInteractive: boolean;
  readonly vm: () => VmIdentity;
  /** The approval server's own URL, once it listens. */
  readonly serverUrl: () => string | null;
  /** Who the token names: the VM's name (the approval server), or its inbox session (the relay). */
  readonly tokenVm?: () => string;
}

export function approvalLinks(o: LinkOptions): ApprovalLinks {
  const token = (e: BridgeEvent): string | null => {
    const d = e.data;
    // only the news that an event is (still) Scheduled asks for a decision: a canceled or
    // completed event carries its last data, Scheduled included, and gets no link
    const kind = transitionOf(e);
    if (kind !== 'scheduled' && kind !== 'updated') return null;
    if (d === undefined || d.eventStatus !== 'Scheduled' || d.notBefore === null || !d.affectsThisVm) return null;
    if (decide(o.rules, toScheduledEvent(e), o.vm().name).action !== 'await') return null;
    const nowS = Math.floor(Date.now() / 1000);
    const expires = Math.min(Math.floor(Date.parse(d.notBefore) / 1000), nowS + o.linkTtlSeconds);
    return expires > nowS ? issueToken(o.key, { e: d.eventId, v: o.tokenVm?.() ?? o.vm().name, x: expires }) : null;
  };
  return {
    token,
    link: (e) => {
      const base = o.publicUrl ?? o.serverUrl();
      const t = base === null ? null : token(e);
      return t === null || base === null ? null : `${base.replace(/\/+$/, '')}/v1/approve?token=${t}`;
    },
    slackInteractive: o.slackInteractive,
  };
}
