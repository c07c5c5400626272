/**
 * POST /v1/slack/interactions: a Slack block_actions payload, v0 signed, whose
 * `se_bridge_approve` button carries an approval token. Slack is answered at once (it wants an
 * answer within 3 s); the approval goes on behind, and the message is then updated through
 * its response_url: the button replaced by who approved, or an ephemeral warning.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { z } from 'zod';
import { HttpClient } from '../lib/http-client.ts';
import { secret } from '../lib/validators.ts';
import { sendJson } from '../lib/http-server.ts';
import { escape as escapeSlack } from '../present/slack-blocks.ts';
import { HttpError, utf8 } from './requests.ts';
import { ApprovalError, type ApprovalService } from './service.ts';
import { verifySlack, type TokenClaims } from './signatures.ts';
import { messageOf } from '../lib/errors.ts';

/**
 * SlackSettings: the `slack` block of the bridge's approval section and of the relay. A message
 * is updated through its response_url only when that URL starts with one of `responseUrls`
 * (Slack's own host by default; GovSlack's is https://hooks.slack-gov.com/): a signed request
 * with a response_url elsewhere would otherwise make the bridge POST wherever it says. A prefix
 * ends with `/` (a host and a path) or with `:` (any port of a host).
 */
export const SlackSettings = z.strictObject({
  signingSecret: secret(z.string().min(1)).describe(
    "The Slack app's signing secret (Basic Information, App Credentials): verifies every interaction.",
  ),
  responseUrls: z
    .array(
      z
        .string()
        .regex(
          /^https?:\/\/[^/?#@]+(:|\/[^?#]*\/?)$/,
          'must be an http(s) URL prefix that ends with / (a host and a path) or : (any port of a host)',
        ),
    )
    .min(1)
    .default(['https://hooks.slack.com/'])
    .describe('URL prefixes a response_url must start with before the bridge updates the Slack message through it.'),
});
export type SlackSettings = z.infer<typeof SlackSettings>;

export interface SlackPayload {
  type?: string;
  user?: { id?: string; username?: string; name?: string };
  actions?: { action_id?: string; value?: unknown }[];
  response_url?: string;
  message?: { blocks?: Record<string, unknown>[] };
}

export interface SlackDeps {
  readonly slack: SlackSettings | undefined;
  readonly service: ApprovalService;
  readonly logger: Logger;
  /** Reads and checks an approval token (throws HttpError). */
  readonly claims: (token: string) => TokenClaims & { nonce: string };
  /** Marks a token used. */
  readonly used: (claims: TokenClaims & { nonce: string }) => void;
}

/** SlackAction: a verified block_actions payload and the token of its Approve button. */
export interface SlackAction {
  readonly payload: SlackPayload;
  readonly token: string;
  /** Who pressed it, as the approval record names them. */
  readonly who: string;
  /** The payload's response_url when it is under a configured prefix, else null. */
  readonly responseUrl: string | null;
}

/** readSlackAction verifies a Slack interaction request and reads its Approve action (throws HttpError). */
export function readSlackAction(slack: SlackSettings | undefined, req: IncomingMessage, body: Buffer): SlackAction {
  if (slack === undefined) throw new HttpError(404, 'NOT_FOUND', 'Slack interactions are not configured');
  const v = verifySlack(slack.signingSecret, req.headers, body);
  if (!v.ok) throw new HttpError(401, v.code, v.message);
  let payload: SlackPayload;
  try {
    payload = JSON.parse(new URLSearchParams(utf8(body)).get('payload') ?? '') as SlackPayload;
  } catch {
    throw new HttpError(400, 'MALFORMED', 'expected a form field "payload" holding JSON');
  }
  if (payload?.type !== 'block_actions') throw new HttpError(400, 'UNSUPPORTED_INTERACTION', 'only block_actions are handled');
  const action = (payload.actions ?? []).find((a) => a.action_id === 'se_bridge_approve');
  if (action === undefined || typeof action.value !== 'string')
    throw new HttpError(400, 'MALFORMED', 'no se_bridge_approve action with a token');
  const who = payload.user?.username ?? payload.user?.name ?? payload.user?.id ?? 'a Slack user';
  const url = payload.response_url;
  const responseUrl = typeof url === 'string' && responseUrlAllowed(url, slack.responseUrls) ? url : null;
  return { payload, token: action.value, who: `@${who}`, responseUrl };
}

/**
 * responseUrlAllowed: `url`, parsed, is under one of the prefixes: the same scheme, host and port
 * (any port for a prefix that ends with `:`) and a path under the prefix's; a URL with a user
 * name or password is never allowed (`https://hooks.slack.com:@evil.example/` is evil.example).
 */
export function responseUrlAllowed(url: string, prefixes: readonly string[]): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (u.username !== '' || u.password !== '' || (u.protocol !== 'https:' && u.protocol !== 'http:')) return false;
  return prefixes.some((prefix) => {
    const anyPort = prefix.endsWith(':');
    const p = new URL(anyPort ? `${prefix.slice(0, -1)}/` : prefix);
    if (p.protocol !== u.protocol || p.hostname !== u.hostname) return false;
    if (anyPort) return true;
    return p.port === u.port && u.pathname.startsWith(p.pathname);
  });
}

/** approvedUpdate: the message with its button replaced by who approved. */
export function approvedUpdate(a: SlackAction, r: { status: string; by: string; via: string }): Record<string, unknown> {
  const line =
    r.status === 'approved'
      ? `:white_check_mark: Approved by <@${escapeSlack(a.payload.user?.id ?? a.who.slice(1))}> — Azure may start the maintenance now.`
      : `:white_check_mark: Already approved by ${escapeSlack(r.by)} (${escapeSlack(r.via)}).`;
  const blocks = (a.payload.message?.blocks ?? []).filter((b) => b.type !== 'actions');
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: line }] });
  return { replace_original: true, text: line, blocks };
}

/** warning: an ephemeral note to the person who pressed the button. */
export function warning(text: string): Record<string, unknown> {
  return { replace_original: false, response_type: 'ephemeral', text };
}

/** slackInteraction answers the request and returns the approval running behind it. */
export function slackInteraction(d: SlackDeps, req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
  const a = readSlackAction(d.slack, req, body);
  const claims = d.claims(a.token);
  sendJson(res, 200, {});
  return d.service
    .approve(claims.e, { by: a.who, via: 'slack' })
    .then(async (r) => {
      d.used(claims);
      await respondSlack(d.logger, a, approvedUpdate(a, r));
    })
    .catch(async (err: unknown) => {
      const message = err instanceof ApprovalError ? err.message : 'the approval failed';
      // held by the fleet budget: the button stays, to be pressed again once a slot frees
      const line =
        err instanceof ApprovalError && err.held
          ? `:hourglass: Held, not approved: ${escapeSlack(message)}`
          : `:warning: Could not approve: ${escapeSlack(message)}`;
      await respondSlack(d.logger, a, warning(line));
    });
}

/** The client that answers Slack through response_url, made on first use. */
let responder: HttpClient | undefined;

/** respondSlack updates a message through its response_url; a failure, or a URL not allowed, is logged. */
export async function respondSlack(logger: Logger, a: SlackAction, body: unknown): Promise<void> {
  const url = a.responseUrl;
  if (url === null) {
    if (a.payload.response_url !== undefined) {
      logger.warn(
        { code: 'SLACK_RESPONSE_URL' },
        "the interaction's response_url is not under slack.responseUrls; the Slack message is not updated",
      );
    }
    return;
  }
  try {
    await (responder ??= new HttpClient({ proxy: 'env', maxSockets: 2 })).request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
      maxBodyBytes: 1024,
      onOverflow: 'drain',
    });
  } catch (err) {
    logger.warn({ code: 'SLACK_RESPONSE_URL', err: messageOf(err) }, 'could not update the Slack message');
  }
}
