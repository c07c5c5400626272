/**
 * The health block (`health`, or `fleet.health`): is the service on this VM whole? An HTTP
 * endpoint that must answer an expected status, a command that must exit 0, a Prometheus query
 * that must answer no sample, the Kubernetes Node and its pods Ready; all must pass.
 */
import { z } from 'zod';
import { KubernetesCheck } from './kubernetes.ts';

const HttpCheck = z.strictObject({
  url: z.url({ protocol: /^https?$/ }).describe('The endpoint to GET.'),
  expect: z.number().int().min(100).max(599).default(200).describe('The status that means healthy.'),
});
const ExecCheck = z.strictObject({
  command: z.array(z.string().min(1)).min(1).describe('The program and its arguments; exit 0 means healthy.'),
});
const PrometheusCheck = z.strictObject({
  url: z.url({ protocol: /^https?$/ }).describe('The Prometheus server (its HTTP API: /api/v1/query).'),
  query: z.string().min(1).describe('A PromQL query: any sample in its answer means not healthy.'),
});
const oneOrMore = <T extends z.ZodType>(t: T) =>
  z.union([t, z.array(t).min(1)]).transform((v) => (Array.isArray(v) ? v : [v]) as z.output<T>[]);

/** The kinds of check: at least one is given. */
const CHECKS = ['http', 'exec', 'prometheus', 'kubernetes'] as const;

export const HealthConfig = z
  .strictObject({
    http: oneOrMore(HttpCheck).optional().describe('One endpoint, or several: each must answer its expected status.'),
    exec: oneOrMore(ExecCheck).optional().describe('One command, or several: each must exit 0.'),
    prometheus: oneOrMore(PrometheusCheck)
      .optional()
      .describe('One query, or several: each must answer no sample (an alert-style query: what is wrong).'),
    kubernetes: KubernetesCheck.optional().describe("This VM's Kubernetes Node Ready, and the pods on it Ready."),
    intervalSeconds: z.number().int().min(1).max(3600).default(10).describe('How often the checks run.'),
    settleSeconds: z
      .number()
      .int()
      .min(0)
      .max(86_400)
      .default(120)
      .describe('How long the member must be healthy, without a break, after its maintenance before its slot is given back.'),
    timeoutSeconds: z
      .number()
      .int()
      .min(1)
      .max(7 * 86_400)
      .default(1800)
      .describe('Still not healthy this long after its maintenance: the slot is given back all the same, said with FLEET_HEALTH_TIMEOUT.'),
  })
  // said with every other problem (a check given with problems of its own is given all the same)
  .refine((h: unknown) => h === null || typeof h !== 'object' || CHECKS.some((k) => (h as Record<string, unknown>)[k] !== undefined), {
    message: 'needs at least one check: http (its url), exec (its command), prometheus (its url and query) or kubernetes',
    when: () => true,
  });
export type HealthConfig = z.infer<typeof HealthConfig>;
