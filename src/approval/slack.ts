/**
 * POST /v1/slack/interactions: a Slack block_actions payload, v0 signed, whose
 * `se_bridge_approve` button carries an approval token. Slack is answered at once (it wants an
 * answer within 3 s); the approval goes on behind, and the message is then updated through
 * its response_url: the button replaced by who approved, or an ephemeral warning.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { HttpClient } from '../lib/http-client.ts';
import { sendJson } from '../lib/http-server.ts';
import { escape as escapeSlack } from '../present/slack-blocks.ts';
import { HttpError, utf8 } from './requests.ts';
import { ApprovalError, type ApprovalService } from './service.ts';
import { verifySlack, type TokenClaims } from './signatures.ts';

export interface SlackPayload {
  type?: string;
  user?: { id?: string; username?: string; name?: string };
  actions?: { action_id?: string; value?: unknown }[];
  response_url?: string;
  message?: { blocks?: Record<string, unknown>[] };
}

export interface SlackDeps {
  readonly signingSecret: string | undefined;
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
}

/** readSlackAction verifies a Slack interaction request and reads its Approve action (throws HttpError). */
export function readSlackAction(signingSecret: string | undefined, req: IncomingMessage, body: Buffer): SlackAction {
  if (signingSecret === undefined) throw new HttpError(404, 'NOT_FOUND', 'Slack interactions are not configured');
  const v = verifySlack(signingSecret, req.headers, body);
  if (!v.ok) throw new HttpError(401, v.code, v.message);
  let payload: SlackPayload;
  try {
    payload = JSON.parse(new URLSearchParams(utf8(body)).get('payload') ?? '') as SlackPayload;
  } catch {
    throw new HttpError(400, 'MALFORMED', 'expected a form field "payload" holding JSON');
  }
  if (payload?.type !== 'block_actions') throw new HttpError(400, 'UNSUPPORTED_INTERACTION', 'only block_actions are handled');
  const action = (payload.actions ?? []).find((a) => a.action_id === 'se_bridge_approve');
  if (action === undefined || typeof action.value !== 'string') throw new HttpError(400, 'MALFORMED', 'no se_bridge_approve action with a token');
  const who = payload.user?.username ?? payload.user?.name ?? payload.user?.id ?? 'a Slack user';
  return { payload, token: action.value, who: `@${who}` };
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
  const a = readSlackAction(d.signingSecret, req, body);
  const claims = d.claims(a.token);
  sendJson(res, 200, {});
  return d.service
    .approve(claims.e, { by: a.who, via: 'slack' })
    .then(async (r) => {
      d.used(claims);
      await respondSlack(d.logger, a.payload.response_url, approvedUpdate(a, r));
    })
    .catch(async (err: unknown) => {
      const message = err instanceof ApprovalError ? err.message : 'the approval failed';
      await respondSlack(d.logger, a.payload.response_url, warning(`:warning: Could not approve: ${escapeSlack(message)}`));
    });
}

/** The client that answers Slack through response_url, made on first use. */
let responder: HttpClient | undefined;

/** respondSlack updates a message through its response_url; a failure is logged. */
export async function respondSlack(logger: Logger, url: string | undefined, body: unknown): Promise<void> {
  if (url === undefined || !/^https?:\/\//.test(url)) return;
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
    logger.warn({ code: 'SLACK_RESPONSE_URL', err: String((err as Error).message) }, 'could not update the Slack message');
  }
}
