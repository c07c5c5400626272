/**
 * node:http and node:https, taken as Node's own CommonJS objects. An ESM `import` of node:http
 * builds a module facade that reads every export, and one of them (WebSocket) loads Node's
 * bundled undici (a 745 KB script, compiled and run) for code the bridge never calls. Value
 * imports of these two modules go through here; type imports may name them directly.
 */
export const http = process.getBuiltinModule('node:http') as typeof import('node:http');
export const https = process.getBuiltinModule('node:https') as typeof import('node:https');
