/**
 * holdSession: what the inbox (its VM's session of the commands queue) and the relay (its
 * replica's session of the replies queue) both do. Accept one Service Bus session, hand its
 * messages over, and when the session is lost or cannot be accepted, close the receiver and
 * accept it again after a full-jitter pause (from `retryBaseMs`, doubling, up to 30 s), until
 * `signal` aborts. Bodies stay bytes: signatures are checked over them.
 */
import type { ServiceBusClient, ServiceBusReceivedMessage, ServiceBusSessionReceiver } from '@azure/service-bus';
import { fullJitter, sleep } from '../lib/time.ts';

export interface SessionHold {
  readonly client: ServiceBusClient;
  readonly queue: string;
  /** The session to accept (asked again before each attempt). */
  readonly session: () => string;
  readonly signal: AbortSignal;
  readonly maxConcurrentCalls: number;
  readonly retryBaseMs?: number;
  /**
   * peekLock (default): the handler settles each message, and a lost one comes again;
   * receiveAndDelete: a message is gone once delivered, with no settlement round trip holding up the next.
   */
  readonly receiveMode?: 'peekLock' | 'receiveAndDelete';
  /** Handles one message; settling it is the handler's job (in peekLock). */
  process(receiver: ServiceBusSessionReceiver, m: ServiceBusReceivedMessage): Promise<void>;
  /** accepted: the session is held; lost: it was held and is gone; refused: it could not be accepted. */
  state(event: 'accepted' | 'lost' | 'refused', session: string, err?: unknown): void;
}

/** Session locks are renewed for as long as the receiver runs (the SDK's limit, in ms), by the SDK in peekLock. */
const RENEW_FOR_MS = 7 * 86_400_000;

/**
 * renewWhileHeld renews a session's lock each time half of what is left of it has passed, until
 * `held` aborts; a failed renewal is tried again while the lock lasts. Resolves with why the lock
 * is lost (undefined once `held` aborted).
 * https://learn.microsoft.com/azure/service-bus-messaging/message-sessions#session-features
 */
async function renewWhileHeld(r: ServiceBusSessionReceiver, held: AbortSignal): Promise<unknown> {
  let until = r.sessionLockedUntilUtc?.getTime() ?? Date.now();
  let last: unknown = new Error('the session lock expired');
  while (!held.aborted) {
    await sleep(Math.max(50, (until - Date.now()) / 2), held).catch(() => undefined);
    if (held.aborted) return undefined;
    if (until <= Date.now()) return last;
    try {
      // bounded by what is left of the lock: past it, renewing is pointless
      const deadline = AbortSignal.timeout(Math.max(100, until - Date.now()));
      until = (await r.renewSessionLock({ abortSignal: AbortSignal.any([held, deadline]) })).getTime();
    } catch (err) {
      last = err;
    }
  }
  return undefined;
}

export async function holdSession(h: SessionHold): Promise<void> {
  const { signal } = h;
  let attempt = 0;
  while (!signal.aborted) {
    const session = h.session();
    let receiver: ServiceBusSessionReceiver | null = null;
    try {
      const r = await h.client.acceptSession(h.queue, session, {
        receiveMode: h.receiveMode ?? 'peekLock',
        maxAutoLockRenewalDurationInMs: h.receiveMode === 'receiveAndDelete' ? 0 : RENEW_FOR_MS,
        skipParsingBodyAsJson: true,
        abortSignal: signal,
      });
      receiver = r;
      attempt = 0;
      h.state('accepted', session);
      const held = new AbortController();
      await new Promise<void>((resolve) => {
        // the session is over once: lost (said once, whoever noticed first) or let go at shutdown
        const lost = (err: unknown) => {
          if (held.signal.aborted) return;
          held.abort();
          h.state('lost', session, err);
          resolve();
        };
        signal.addEventListener('abort', () => (held.abort(), resolve()), { once: true });
        // the SDK renews a session's lock only in peekLock: in receiveAndDelete the lock is renewed here
        if (h.receiveMode === 'receiveAndDelete') void renewWhileHeld(r, held.signal).then((err) => err !== undefined && lost(err));
        r.subscribe(
          {
            processMessage: (m) => h.process(r, m),
            processError: async (args) => {
              if (args.errorSource !== 'processMessageCallback') lost(args.error);
            },
          },
          { autoCompleteMessages: false, maxConcurrentCalls: h.maxConcurrentCalls },
        );
      }).finally(() => held.abort());
    } catch (err) {
      if (signal.aborted) break;
      h.state('refused', session, err);
    }
    await receiver?.close().catch(() => undefined);
    if (signal.aborted) break;
    await sleep(Math.max(100, fullJitter(attempt++, h.retryBaseMs ?? 1000, 30_000)), signal).catch(() => undefined);
  }
}
