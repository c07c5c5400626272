/**
 * teams sink: one Adaptive Card message per transition, posted to a Teams Workflows webhook
 * ("When a Teams webhook request is received" → "Post card in a chat or channel"). Workflows
 * answer 202 Accepted; 429 and 5xx are retried through the shared outcome table.
 */
import { z } from 'zod';
import { toChatMessage } from '../present/chat-model.ts';
import { jsonClient, postJson } from './shared/http.ts';
import { httpUrl, secret, sinkBase, type SinkModule, oneByOne } from './contract.ts';
import { teamsMessage } from '../present/teams-card.ts';

export const configSchema = z.strictObject({
  type: z.literal('teams'),
  ...sinkBase,
  /** The HTTP POST URL of the workflow's webhook trigger (it contains a signature: keep it secret). */
  webhookUrl: secret(httpUrl),
});
export type TeamsConfig = z.infer<typeof configSchema>;

export const teamsSink: SinkModule<TeamsConfig> = {
  type: 'teams',
  configSchema,
  maxBatchSize: 1,
  create(config, context) {
    const dispatcher = jsonClient();
    return {
      async send(events, { signal }) {
        return oneByOne(events, (e) => postJson(dispatcher, config.webhookUrl, teamsMessage(toChatMessage(e, { approveUrl: context.approval?.link(e) ?? null })), signal));
      },
      async close() {
        dispatcher.close();
      },
    };
  },
};
