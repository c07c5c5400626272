/** What rhea keeps on its links and connections beyond its typings: the attach frames, the TCP socket. */
import type { Connection } from 'rhea';

/** rhea keeps the attach frames on the link; its typings do not show them. */
interface LinkFrames {
  remote: { attach?: { source?: { address?: string; filter?: Record<string, unknown> }; target?: { address?: string } } };
  local: { attach: Record<string, unknown> };
}
export const frames = (link: unknown) => link as LinkFrames;

/** socketOf: the TCP socket under a rhea connection (rhea keeps it, untyped, on `socket`). */
export const socketOf = (connection: Connection) =>
  (connection as unknown as { socket?: { once(event: 'close', f: () => void): void; setNoDelay?(v: boolean): void; destroy(): void } })
    .socket;
