/**
 * node:http, taken as Node's own CommonJS object, for the bridge's servers (approval, metrics,
 * simulator). An ESM `import` of node:http builds a module facade that reads every export, and
 * one of them (WebSocket) loads Node's bundled copy of undici (a 745 KB script, compiled and
 * run) beside the undici package the bridge already uses as its client. Value imports of
 * node:http go through here; type imports may name it directly.
 */
export const http = process.getBuiltinModule('node:http');
