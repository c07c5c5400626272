/** listen starts an HTTP server on HOST:PORT (port 0 picks a free one) and returns its base URL. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export async function listen(server: Server, host: string, port: number): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return baseUrl(server);
}

export function baseUrl(server: Server): string {
  const a = server.address() as AddressInfo;
  return `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
}
