/**
 * approvalLinks builds what chat sinks show for an event the policy leaves to a human: a
 * signed token bound to the EventId, the VM and an expiry (NotBefore, or `linkTtlSeconds`
 * from now, whichever is sooner), and the approval page link that carries it.
 */
import type { VmIdentity } from '../imds/identity.ts';
import type { BridgeView } from '../imds/view.ts';
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

/** What links are made from: the approval configuration, its keys decoded once by the schema. */
export interface LinkSettings {
  /** The approval secret's key, or null without one. */
  readonly key: Buffer | null;
  readonly rules: readonly Rule[];
  readonly linkTtlSeconds: number;
  readonly publicUrl?: string | undefined;
  readonly slack?: unknown;
  /** Fleet approvals: the relay's public URL, and this VM's inbox with its link key. */
  readonly relayUrl?: string | undefined;
  readonly inbox?: { readonly linkKeyBytes: Buffer } | undefined;
}

/**
 * linksFor builds the links chat sinks show, for events the policy leaves to a human: with fleet
 * approvals they go to the relay, with tokens of this VM's link key naming `inboxSession`; else
 * to the approval server, with tokens of the approval secret. Undefined when there is neither.
 */
export function linksFor(a: LinkSettings, view: BridgeView, inboxSession?: () => string): ApprovalLinks | undefined {
  const vm = () => view.vm;
  const serverUrl = () => view.approvalServerUrl;
  const common = { rules: a.rules, linkTtlSeconds: a.linkTtlSeconds, vm, serverUrl };
  if (a.relayUrl !== undefined && a.inbox !== undefined && inboxSession !== undefined) {
    return approvalLinks({ ...common, key: a.inbox.linkKeyBytes, publicUrl: a.relayUrl, slackInteractive: true, tokenVm: inboxSession });
  }
  if (a.key === null) return undefined;
  return approvalLinks({ ...common, key: a.key, publicUrl: a.publicUrl ?? null, slackInteractive: a.slack !== undefined });
}
