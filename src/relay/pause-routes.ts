/**
 * The relay's brakes of a group: `POST /v1/fleet/pause` (`{"group", "by", "reason", "until"?}`)
 * and `POST /v1/fleet/resume` (`{"group", "by"}`), signed like POST
 * /v1/approvals (Standard Webhooks, with one of `apiSecrets`). Each writes the group's pause record
 * in the fleet store as `se-bridge fleet pause` and `fleet resume` do (fleet/budget/pause-store.ts);
 * a request that does not read is a JSON 4xx and writes nothing.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { z } from 'zod';
import { verifyStandardWebhook } from '../approval/signatures.ts';
import { HttpError, utf8 } from '../approval/requests.ts';
import { AZURE_GROUP, GROUP_NAME } from '../fleet/budget/config.ts';
import { pauseGroup, pauseProblem, resumeGroup, MAX_PAUSE_TEXT } from '../fleet/budget/pause-store.ts';
import { openFleetStore } from '../fleet/budget/stores/open.ts';
import { messageOf } from '../lib/errors.ts';
import { sendJson } from '../lib/http-server.ts';
import type { RelayConfig } from './config.ts';

const groupName = z
  .string()
  .regex(GROUP_NAME, 'a group a member may name')
  .refine((g) => g !== AZURE_GROUP, 'a group a member may name');
const by = z.string().min(1).max(200);
const PauseBody = z.strictObject({
  group: groupName,
  by,
  reason: z.string().min(1).max(MAX_PAUSE_TEXT),
  until: z.string().max(64).optional(),
});
const ResumeBody = z.strictObject({ group: groupName, by });

/** brake: a signed pause or resume of one group. */
export async function brake(
  o: { readonly config: RelayConfig; readonly apiKeys: readonly Buffer[]; readonly logger: Logger },
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  body: Buffer,
): Promise<void> {
  const fleet = o.config.fleet;
  if (fleet === undefined || o.apiKeys.length === 0)
    throw new HttpError(404, 'NOT_FOUND', "pausing a group needs fleet and apiSecrets in the relay's configuration");
  const v = verifyStandardWebhook(o.apiKeys, req.headers, body);
  if (!v.ok) throw new HttpError(401, v.code, v.message);
  if (!/^application\/json\b/i.test(String(req.headers['content-type'] ?? '')))
    throw new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'content-type must be application/json');
  let json: unknown;
  try {
    json = JSON.parse(utf8(body));
  } catch {
    throw new HttpError(400, 'MALFORMED', 'the body is not JSON');
  }
  const action = url.pathname.endsWith('/pause') ? 'pause' : 'resume';
  const parsed = (action === 'pause' ? PauseBody : ResumeBody).safeParse(json);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new HttpError(400, 'MALFORMED', `${i?.path.join('.') || '(body)'}: ${i?.message ?? 'not a request'}`);
  }
  const input = parsed.data as { group: string; by: string; reason?: string; until?: string };
  const { group } = input;
  const now = Date.now();
  const request = { who: input.by, why: input.reason ?? '', ...(input.until === undefined ? {} : { until: input.until }) };
  const problem = action === 'pause' ? pauseProblem(request, now) : null;
  if (problem !== null) throw new HttpError(400, 'MALFORMED', problem);
  const store = await openFleetStore(fleet.store, group, fleet.storeTimeoutMs);
  try {
    if (action === 'pause') {
      const pause = await pauseGroup(store, request, now);
      o.logger.warn(
        { code: 'FLEET_PAUSED', group, who: pause.who, until: pause.until ?? null },
        `relay: group ${group} paused by ${pause.who}`,
      );
      return sendJson(res, 200, { group, paused: pause });
    }
    const r = await resumeGroup(store, now);
    o.logger.info({ group, who: input.by, was: r.resumed }, `relay: group ${group} resumed by ${input.by}`);
    return sendJson(res, 200, { group, resumed: r.resumed, breakerCleared: r.breakerCleared, by: input.by });
  } catch (err) {
    if (err instanceof HttpError) throw err;
    throw new HttpError(503, 'FLEET_STORE_UNAVAILABLE', `the fleet store of group ${group} could not be written: ${messageOf(err)}`);
  } finally {
    await store.close();
  }
}
