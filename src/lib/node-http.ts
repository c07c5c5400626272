/**
 * node:http and node:https, taken as Node's own CommonJS objects. An ESM `import` of node:http
 * builds a module facade that reads every export, and one of them (WebSocket) loads Node's
 * bundled undici (a 745 KB script, compiled and run) for code the bridge never calls. Value
 * imports of these modules go through here; type imports may name them directly.
 *
 * node:https (with node:tls under it, about 3 MiB resident) is loaded on first use: a bridge
 * that speaks only plain HTTP (IMDS, stdout and file sinks) never loads it.
 */
export const http = process.getBuiltinModule('node:http') as typeof import('node:http');
export const https = (): typeof import('node:https') => process.getBuiltinModule('node:https') as typeof import('node:https');
export const tls = (): typeof import('node:tls') => process.getBuiltinModule('node:tls') as typeof import('node:tls');
