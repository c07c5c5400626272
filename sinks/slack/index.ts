/**
 * slack sink, two ways:
 * - incoming webhook (`webhookUrl`): one Block Kit message per transition;
 * - bot token (`botToken` + `channel`, through @slack/web-api, loaded only then, which sends on
 *   the project's HTTP client: fetch.ts): the first transition of an event posts one message;
 *   later transitions update that message in place (chat.update) and add a short reply in its
 *   thread, so one maintenance is one message whose state reads at a glance. The message reference is kept in the store, across restarts.
 * Slack allows about one message per second per channel and answers 429 with Retry-After:
 * that, 5xx and network errors are retried; Slack's own errors (invalid_auth,
 * channel_not_found, …) are rejected with their name.
 */
import type { WebClient } from '@slack/web-api';
import { z } from 'zod';
import {
  type BridgeEvent,
  delivered,
  type FleetDigest,
  httpUrl,
  oneByOne,
  type Outcome,
  reject,
  retry,
  secret,
  sinkBase,
  type SinkModule,
} from '../../src/api.ts';
import { digestSlack, slackMessage, threadLine, toChatMessage } from '../../src/kit.ts';
import { jsonClient, postJson } from '../shared/http.ts';
import { slackFetch } from './fetch.ts';

export const configSchema = z
  .strictObject({
    type: z.literal('slack'),
    ...sinkBase,
    webhookUrl: secret(httpUrl).optional().describe('An incoming webhook URL (keep it secret)...'),
    botToken: secret(z.string().regex(/^xox[a-z]-/, 'must be a Slack token (xoxb-…)'))
      .optional()
      .describe('...or a bot token (xoxb-…, scope chat:write) and the channel to post in.'),
    channel: z.string().min(1).optional().describe('With botToken: the channel to post in (its id, such as C0123456789).'),
    threadReplies: z.boolean().default(true).describe("Bot mode: add a short reply in the message's thread at each change (default true)."),
    apiUrl: httpUrl.default('https://slack.com/api/').describe("The Web API base URL (Slack's unless you run GovSlack or a test peer)."),
  })
  .superRefine((c, ctx) => {
    if ((c.webhookUrl === undefined) === (c.botToken === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['webhookUrl'], message: 'set either webhookUrl, or botToken with channel' });
    }
    if (c.botToken !== undefined && c.channel === undefined)
      ctx.addIssue({ code: 'custom', path: ['channel'], message: 'is required with botToken' });
    if (c.webhookUrl !== undefined && c.channel !== undefined)
      ctx.addIssue({ code: 'custom', path: ['channel'], message: 'goes with botToken; an incoming webhook posts to its own channel' });
  });
export type SlackConfig = z.infer<typeof configSchema>;

interface MessageRef {
  channel: string;
  ts: string;
}

/** Slack's errors for a message that is gone or can no longer be updated (a digest posts a new one). */
const GONE = ['message_not_found', 'cant_update_message', 'edit_window_closed'];

/** A message's reference as the relay kept it (a channel id and a timestamp), or null when it does not read as one. */
const MessageRefSchema = z.object({ channel: z.string().regex(/^[A-Z0-9]{1,40}$/), ts: z.string().regex(/^\d{1,12}\.\d{1,8}$/) });
function refOf(ref: string | null): MessageRef | null {
  if (ref === null) return null;
  try {
    const parsed = MessageRefSchema.safeParse(JSON.parse(ref));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** classifySlackError maps @slack/web-api errors onto outcomes. */
function classifySlackError(err: unknown): Outcome {
  const e = err as { code?: string; retryAfter?: number; statusCode?: number; data?: { error?: string }; message?: string };
  switch (e.code) {
    case 'slack_webapi_rate_limited_error':
      return retry('Slack rate limit (429)', (e.retryAfter ?? 1) * 1000);
    case 'slack_webapi_http_error':
      return (e.statusCode ?? 0) >= 500 || e.statusCode === 408
        ? retry(`Slack HTTP ${e.statusCode}`)
        : reject(`Slack HTTP ${e.statusCode}`);
    case 'slack_webapi_request_error':
      return retry(`Slack request failed: ${e.message ?? 'network error'}`);
    case 'slack_webapi_platform_error': {
      const code = e.data?.error ?? 'unknown_error';
      const transient = ['ratelimited', 'internal_error', 'fatal_error', 'service_unavailable', 'request_timeout'];
      return transient.includes(code) ? retry(`Slack: ${code}`) : reject(`Slack: ${code}`);
    }
    default:
      return retry(`Slack: ${e.message ?? String(err)}`);
  }
}

export const slackSink: SinkModule<SlackConfig, typeof configSchema> = {
  type: 'slack',
  configSchema,
  maxBatchSize: 1,
  async create(config, context) {
    const linkOf = (e: BridgeEvent) => context.approval?.link(e) ?? null;
    const chat = (e: BridgeEvent) =>
      toChatMessage(e, { approveUrl: linkOf(e), preparations: context.preparations?.(e.data.eventId) ?? [] });
    if (config.webhookUrl !== undefined) {
      const url = config.webhookUrl;
      const dispatcher = jsonClient();
      return {
        async send(events, { signal }) {
          return await oneByOne(events, (e) => postJson(dispatcher, url, slackMessage(chat(e)), signal));
        },
        // an incoming webhook's message cannot be updated: each digest is a new one
        async digest(d, { signal }) {
          return { outcome: await postJson(dispatcher, url, digestSlack(d), signal), ref: null };
        },
        async close() {
          dispatcher.close();
        },
      };
    }
    const { WebClient } = await import('@slack/web-api');
    const http = jsonClient();
    const web: WebClient = new WebClient(config.botToken, {
      slackApiUrl: config.apiUrl,
      fetch: slackFetch(http),
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      timeout: config.delivery.timeoutMs,
    });
    const state = context.state;
    const channel = config.channel!;

    async function deliver(e: BridgeEvent): Promise<Outcome> {
      const msg = chat(e);
      const token = msg.approveUrl !== null && context.approval?.slackInteractive ? context.approval.token(e) : null;
      const payload = slackMessage(msg, token !== null ? { interactiveValue: token } : {});
      const key = `message:${msg.eventId}`;
      const saved = state?.get(key);
      const ref = saved === undefined ? null : (JSON.parse(saved) as MessageRef);
      try {
        if (ref !== null) {
          try {
            await web.chat.update({ channel: ref.channel, ts: ref.ts, text: payload.text, blocks: payload.blocks as never });
            if (config.threadReplies) await web.chat.postMessage({ channel: ref.channel, thread_ts: ref.ts, text: threadLine(msg) });
            return delivered;
          } catch (err) {
            // the message was deleted: post a new one below
            if (!GONE.includes((err as { data?: { error?: string } }).data?.error ?? '')) throw err;
          }
        }
        const res = await web.chat.postMessage({
          channel,
          text: payload.text,
          blocks: payload.blocks as never,
          unfurl_links: false,
          unfurl_media: false,
        });
        if (res.ts && res.channel) state?.set(key, JSON.stringify({ channel: res.channel, ts: res.ts }));
        return delivered;
      } catch (err) {
        return classifySlackError(err);
      }
    }

    /** digest: the period's message updated in place (chat.update), else a new one posted. */
    async function digest(d: FleetDigest, ref: string | null): Promise<{ outcome: Outcome; ref: string | null }> {
      const payload = digestSlack(d);
      const was = refOf(ref);
      try {
        if (was !== null) {
          try {
            await web.chat.update({ channel: was.channel, ts: was.ts, text: payload.text, blocks: payload.blocks as never });
            return { outcome: delivered, ref };
          } catch (err) {
            // gone, or no longer editable: the period's digest goes on in a new message
            if (!GONE.includes((err as { data?: { error?: string } }).data?.error ?? '')) throw err;
          }
        }
        const res = await web.chat.postMessage({ channel, text: payload.text, blocks: payload.blocks as never, unfurl_links: false });
        const made = res.ts && res.channel ? JSON.stringify({ channel: res.channel, ts: res.ts }) : null;
        return { outcome: delivered, ref: made };
      } catch (err) {
        return { outcome: classifySlackError(err), ref };
      }
    }

    return {
      async send(events) {
        return await oneByOne(events, deliver);
      },
      digest: (d, { ref }) => digest(d, ref),
      async close() {
        http.close();
      },
    };
  },
};
