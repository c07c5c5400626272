/**
 * The relay's view of the fleet (`fleet`, `readKeys`) and Azure's feed beside it (`azure`): where
 * the members' records live, who may read them, and where Azure's own records of the fleet's
 * events come from (Event Grid deliveries, Resource Graph).
 */
import { z } from 'zod';
import { FleetStoreConfig, storeTimeoutMs } from '../fleet/budget/stores/config.ts';
import { FleetConfig } from '../fleet/budget/config.ts';
import { RateConfig } from '../fleet/budget/rate.ts';
import { CalendarConfig } from '../calendar/config.ts';
import { CredentialConfig } from '../azure/credentials.ts';
import { EVENT_GRID_APP_ID } from '../azure/bearer.ts';
import { httpsOrLoopback } from '../lib/http-settings.ts';
import { secret } from '../lib/validators.ts';
import { keyBytes } from '../fleet/keys.ts';

export const RelayFleetConfig = z
  .strictObject({
    store: FleetStoreConfig.describe("The fleet's store, as the members name it (`fleet.store`): the relay reads every group in it."),
    storeTimeoutMs: storeTimeoutMs('How long one call to the store may take before the read fails (and says so).'),
    cacheMs: z
      .number()
      .int()
      .min(0)
      .max(60_000)
      .default(2000)
      .describe('How old a read of the store may be when a request is answered: every request within it shares one read.'),
    groups: z
      .record(
        FleetConfig.shape.group,
        z.strictObject({
          maxUnavailable: FleetConfig.shape.maxUnavailable
            .unwrap()
            .describe(
              "The group's budget as the relay counts it for approvals via arm: a number, or a percentage of the members with a fresh record.",
            ),
          zones: FleetConfig.shape.zones.describe(
            'one-at-a-time: an approval via arm never takes a member down while a member of another availability zone is in maintenance (as the members of the group go).',
          ),
          rate: RateConfig.optional().describe(
            "The group's rate as the relay holds approvals via arm to it (fleet.rate): without it the relay holds none by the rate, and keeps the members' stamps as they are.",
          ),
          calendar: CalendarConfig.optional().describe(
            "The group's calendar as the relay keeps it for approvals via arm: a blackout holds them but a forced one (default: what the members' records say of theirs).",
          ),
        }),
      )
      .default({})
      .describe(
        "Each group's budget (and calendar) as the relay states it for approvals via arm, by the group's name; GET /v1/fleet and fleet status --relay-config count the group so too. A group not named here is counted by its members' records, stale ones too: records that disagree, or none that states one, refuse an approval via arm but a forced one.",
      ),
  })
  .describe("The fleet view: GET /v1/fleet and /v1/fleet/events read the members' records from this store.");
export type RelayFleetConfig = z.infer<typeof RelayFleetConfig>;

const guid = z.guid('must be a GUID (8-4-4-4-12 hex digits)');

const readKey = secret(z.string().min(16, 'must be at least 16 characters'));

export const ReadKeys = z
  .array(readKey)
  .default([])
  .describe('Secrets for the read API (GET /v1/fleet…), sent as `Authorization: Bearer <key>`; several while rotating.');

const EventGridConfig = z
  .strictObject({
    key: secret(z.string().min(16, 'must be at least 16 characters'))
      .optional()
      .describe("A key Event Grid's subscription sends in the endpoint's `code` query parameter."),
    entra: z
      .strictObject({
        tenantId: guid.describe('The tenant whose tokens are accepted (`tid`, and its v1 or v2 issuer).'),
        audience: z.string().min(1).describe("The token's audience (`aud`): the application id or URI of the subscription's Entra app."),
        allowedClients: z
          .array(guid)
          .min(1)
          .max(20)
          .default([EVENT_GRID_APP_ID])
          .describe(
            `The client applications whose tokens are taken (\`appid\` in v1 tokens, \`azp\` in v2); default: Event Grid's own in Azure's public cloud, ${EVENT_GRID_APP_ID} (another cloud's Event Grid has another).`,
          ),
        role: z
          .string()
          .min(1)
          .max(120)
          .optional()
          .describe(
            'An app role the token must carry (`roles`), such as AzureEventGridSecureWebhookSubscriber: with assignment required on the app, only the principals given it get a token.',
          ),
        maxLifetimeSeconds: z
          .number()
          .int()
          .min(300)
          .max(86_400)
          .default(86_400)
          .describe(
            "The longest lifetime a token may have (from nbf, else iat, to exp), and how long after its iat it is taken; Entra ID's access tokens live one to 24 hours.",
          ),
        jwksUrl: httpsOrLoopback("the tenant's signing keys")
          .optional()
          .describe("Where the tenant's signing keys are (default: the tenant's own discovery keys on Entra ID)."),
      })
      .optional()
      .describe(
        'Entra ID-protected delivery: a bearer token signed by the tenant, for the audience, issued to one of allowedClients (with role, when set).',
      ),
    maxNewPerDelivery: z
      .number()
      .int()
      .min(1)
      .max(5000)
      .default(100)
      .describe(
        "How many new events one delivery may add (a scale set's event counts each instance it names): a delivery past it is refused whole (413, which Event Grid dead-letters and never retries), so each bounds the records and the unwatched alerts one delivery can make. Keep the subscription's max events per batch at or below it.",
      ),
  })
  .superRefine((c, ctx) => {
    if ((c.key === undefined) === (c.entra === undefined))
      ctx.addIssue({
        code: 'custom',
        path: ['key'],
        message: 'set either key or entra: one way deliveries prove they come from Event Grid',
      });
  });

export const AzureFeedConfig = z
  .strictObject({
    recordKey: secret(keyBytes)
      .optional()
      .describe(
        "The key the relay seals Azure's records with in the fleet's store (which every member may write), so no member can forge one: base64 of 32 bytes or more, the same on every replica (`se-bridge fleet keys` prints one as its fleet key). Default: derived from fleetKey; required without it.",
      ),
    subscriptions: z
      .array(z.guid('must be a subscription id (a GUID)'))
      .min(1)
      .describe('The subscriptions whose events the relay accepts: a delivery or handshake from a topic outside them is refused.'),
    unwatchedAfterSeconds: z
      .number()
      .int()
      .min(5)
      .max(86_400)
      .optional()
      .describe(
        "How long an event Azure lists may go unlisted by its VM's member (or its member stay stale) before it is unwatched; default: two of the member's heartbeats. A VM with no member record is unwatched at once.",
      ),
    forgetEndedAfterSeconds: z
      .number()
      .int()
      .min(86_400)
      .max(30 * 86_400)
      .default(2 * 86_400)
      .describe(
        "How long Azure's record of an event is kept once the event ended (Completed or Canceled), then deleted from the store: longer than Event Grid retries a delivery (24 hours at most), so a late copy finds it still over.",
      ),
    checkSeconds: z
      .number()
      .int()
      .min(1)
      .max(3600)
      .default(15)
      .describe('How often the relay looks for unwatched events (one read of the store each time, shared with the read API).'),
    eventGrid: EventGridConfig.optional().describe(
      "POST /v1/azure/eventgrid: the system topic's deliveries (its handshake, then its events).",
    ),
    resourceGraph: z
      .strictObject({
        intervalSeconds: z.number().int().min(10).max(3600).default(60).describe('How often maintenanceresources is queried.'),
      })
      .optional()
      .describe(
        "Query Resource Graph's maintenanceresources table for the subscriptions' scheduled events (a second source beside Event Grid), through arm.",
      ),
    arm: z
      .strictObject({
        endpoint: httpsOrLoopback("the relay's Entra ID token")
          .default('https://management.azure.com')
          .describe('Resource Manager (another cloud, or a stand-in).'),
        credential: CredentialConfig.optional().describe("The relay's Entra ID credential; default: its managed identity."),
        timeoutMs: z.number().int().min(500).max(60_000).default(15_000).describe('The deadline of one request to Resource Manager.'),
        caFile: z
          .string()
          .min(1)
          .optional()
          .describe("A PEM file of the CA(s) to trust for endpoint, beside the system's (a private cloud, or a stand-in)."),
      })
      .prefault({})
      .describe("Resource Manager, for Resource Graph and for approvals `via: arm` (Scheduled Events Contributor on the VMs' scope)."),
  })
  .describe("Azure's own feed of the fleet's scheduled events, beside what the members say: the proof that none was missed.");
export type AzureFeedConfig = z.infer<typeof AzureFeedConfig>;
