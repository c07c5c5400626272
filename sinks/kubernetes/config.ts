/** The kubernetes sink's configuration: which Node, which cluster, and how its drain goes. */
import { z } from 'zod';
import { sinkBase } from '../../src/api.ts';
import { preparationKeys } from '../shared/preparation.ts';

const dns1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const configSchema = z.strictObject({
  type: z.literal('kubernetes'),
  ...sinkBase,
  ...preparationKeys,
  nodeName: z
    .string()
    .max(253)
    .regex(dns1123, 'must be a Kubernetes node name (lower-case DNS subdomain)')
    .optional()
    .describe('The Node to prepare; default the NODE_NAME environment variable, else the Node whose spec.providerID names this VM.'),
  kubeconfig: z.string().min(1).optional().describe('A kubeconfig file; default the in-cluster service account.'),
  drain: z
    .strictObject({
      timeoutSeconds: z
        .number()
        .int()
        .min(1)
        .max(24 * 3600)
        .default(600)
        .describe('Give up this attempt after this long (the delivery policy tries again, never past NotBefore).'),
      gracePeriodSeconds: z.number().int().min(0).max(3600).default(30).describe("At most this per pod; the pod's own, if shorter, wins."),
      deleteEmptyDirData: z
        .boolean()
        .default(false)
        .describe('false: a pod with an emptyDir volume blocks the drain (as kubectl drain refuses); true: evict it.'),
      pollMs: z.number().int().min(50).max(60_000).default(1000).describe('How often evicted pods are checked for being gone.'),
      deadlineMarginSeconds: z
        .number()
        .int()
        .min(0)
        .max(600)
        .default(5)
        .describe("Each pod's grace ends this long before NotBefore (a 30 s Spot eviction leaves 25 s), whatever its own."),
      force: z
        .boolean()
        .default(false)
        .describe('false: a pod no controller manages blocks the drain (nothing would start it again); true: evict it.'),
      onDeadline: z
        .enum(['wait', 'delete'])
        .default('wait')
        .describe(
          'A pod a disruption budget still holds near NotBefore. wait: keep asking until NotBefore; delete: delete it past the budget (as kubectl drain --disable-eviction), when its grace would otherwise not end deadlineMarginSeconds before NotBefore.',
        ),
    })
    .prefault({}),
  taint: z.boolean().default(true).describe('Add the taint scheduledevents.azure.com/maintenance=<EventType>:NoSchedule.'),
  excludeFromLoadBalancers: z
    .boolean()
    .default(true)
    .describe('Add the label node.kubernetes.io/exclude-from-external-load-balancers=true.'),
  advisory: z
    .enum(['ignore', 'cordon'])
    .default('ignore')
    .describe(
      'A Spot rebalance recommendation (EventStatus Advisory): ignore it, or cordon the node (nothing drained) until Azure withdraws it.',
    ),
  condition: z
    .boolean()
    .default(true)
    .describe(
      "Set the Node condition ScheduledMaintenance (reason: the EventType) while a maintenance is pending, where AKS's node-problem-detector sets none; removed after.",
    ),
});
export type KubernetesConfig = z.infer<typeof configSchema>;
