/**
 * teams sink: one Adaptive Card message per transition, posted to a Teams Workflows webhook
 * ("When a Teams webhook request is received" → "Post card in a chat or channel"). Workflows
 * answer 202 Accepted; 429 and 5xx are retried through the shared outcome table. A workflow
 * that only people or apps of the tenant may trigger takes an Entra ID token (`auth`).
 */
import { z } from 'zod';
import { httpUrl, oneByOne, secret, sinkBase, type SinkModule } from '../../src/api.ts';
import {
  allowInsecureHttp,
  digestTeams,
  BearerSource,
  credentialOf,
  EntraAuth,
  refusePlainHttpCredentials,
  teamsMessage,
  toChatMessage,
} from '../../src/kit.ts';
import { jsonClient, postJson } from '../shared/http.ts';

export const configSchema = z
  .strictObject({
    type: z.literal('teams'),
    ...sinkBase,
    webhookUrl: secret(httpUrl).describe("The HTTP POST URL of the workflow's webhook trigger (it contains a signature: keep it secret)."),
    auth: EntraAuth.optional().describe(
      'An Entra ID token for a workflow restricted to the tenant: { kind: managedIdentity, scope: https://service.flow.microsoft.com//.default }.',
    ),
    /** Lets the Entra ID token go over plain http to a host that is not loopback. */
    allowInsecureHttp,
  })
  .superRefine((c, ctx) => refusePlainHttpCredentials(c, c.webhookUrl, 'webhookUrl', c.auth !== undefined, ctx));
export type TeamsConfig = z.infer<typeof configSchema>;

export const teamsSink: SinkModule<TeamsConfig, typeof configSchema> = {
  type: 'teams',
  configSchema,
  maxBatchSize: 1,
  create(config, context) {
    const dispatcher = jsonClient();
    const bearer = config.auth ? new BearerSource(credentialOf(config.auth), config.auth.scope) : null;
    return {
      async send(events, { signal }) {
        return oneByOne(events, (e) =>
          postJson(
            dispatcher,
            config.webhookUrl,
            teamsMessage(
              toChatMessage(e, {
                approveUrl: context.approval?.link(e) ?? null,
                preparations: context.preparations?.(e.data.eventId) ?? [],
              }),
            ),
            signal,
            bearer,
          ),
        );
      },
      // a workflow posts a new card each time: Teams Workflows cannot update a message in place
      async digest(d, { signal }) {
        return { outcome: await postJson(dispatcher, config.webhookUrl, digestTeams(d), signal, bearer), ref: null };
      },
      async close() {
        dispatcher.close();
      },
    };
  },
};
