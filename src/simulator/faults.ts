/**
 * Faults the simulator injects into its IMDS answers: the next N answers (to one kind of
 * request, or all) are a status, slow, garbage, truncated, not a Scheduled Events document,
 * a reset connection, or a hang.
 */
import type { ServerResponse } from 'node:http';
import { z } from 'zod';

export const FAULT_KINDS = ['status', 'slow', 'garbage', 'truncated', 'schema', 'reset', 'hang'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export const FaultSpec = z.strictObject({
  kind: z.enum(FAULT_KINDS),
  /** How many answers the fault applies to. */
  count: z.number().int().min(1).max(1_000_000).default(1),
  /** For `status`: the HTTP status to answer. */
  status: z.number().int().min(300).max(599).optional(),
  /** For `status`: a Retry-After header in seconds. */
  retryAfterSec: z.number().int().min(0).max(3600).optional(),
  /** For `slow`: how long to wait before answering. */
  delayMs: z.number().int().min(0).max(600_000).default(2000),
  /** Which requests it applies to. */
  target: z.enum(['scheduledevents', 'start', 'compute', 'token', 'all']).default('scheduledevents'),
});
export type FaultSpec = z.input<typeof FaultSpec>;
export type Fault = z.infer<typeof FaultSpec>;

/** takeFault takes the next fault for a request of `target`, counting it down. */
export function takeFault(faults: Fault[], target: string): Fault | null {
  const i = faults.findIndex((f) => f.target === 'all' || f.target === target);
  if (i < 0) return null;
  const f = faults[i]!;
  f.count -= 1;
  if (f.count <= 0) faults.splice(i, 1);
  return f;
}

/** applyFault answers with the fault; false when the normal answer should follow (slow). */
export async function applyFault(f: Fault, res: ServerResponse, documentText: () => string, hung: Set<ServerResponse>): Promise<boolean> {
  switch (f.kind) {
    case 'status':
      res.writeHead(f.status ?? 500, {
        'content-type': 'application/json',
        ...(f.retryAfterSec !== undefined ? { 'retry-after': String(f.retryAfterSec) } : {}),
      });
      res.end(JSON.stringify({ error: `simulated ${f.status ?? 500}` }));
      return true;
    case 'slow':
      await new Promise((r) => setTimeout(r, f.delayMs));
      return false;
    case 'garbage':
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('<html>definitely not json</html>');
      return true;
    case 'truncated': {
      const text = documentText();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(text.slice(0, Math.max(1, Math.floor(text.length / 2))));
      return true;
    }
    case 'schema':
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ DocumentIncarnation: 'seven', Events: 'none' }));
      return true;
    case 'reset':
      res.socket?.destroy();
      return true;
    case 'hang':
      hung.add(res);
      res.on('close', () => hung.delete(res));
      return true;
  }
}
