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

/** Session locks are renewed for as long as the receiver runs (the SDK's limit, in ms). */
const RENEW_FOR_MS = 7 * 86_400_000;

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
      await new Promise<void>((resolve) => {
        signal.addEventListener('abort', () => resolve(), { once: true });
        r.subscribe(
          {
            processMessage: (m) => h.process(r, m),
            processError: async (args) => {
              if (args.errorSource === 'processMessageCallback') return;
              h.state('lost', session, args.error);
              resolve();
            },
          },
          { autoCompleteMessages: false, maxConcurrentCalls: h.maxConcurrentCalls },
        );
      });
    } catch (err) {
      if (signal.aborted) break;
      h.state('refused', session, err);
    }
    await receiver?.close().catch(() => undefined);
    if (signal.aborted) break;
    await sleep(Math.max(100, fullJitter(attempt++, h.retryBaseMs ?? 1000, 30_000)), signal).catch(() => undefined);
  }
}
