/**
 * The parts of undici the bridge imports one by one (see http-client.ts): its main entry also
 * loads fetch, WebSocket and cookies, which touch Node's own web globals and so load Node's
 * bundled copy of undici beside the package.
 */
declare module 'undici/lib/dispatcher/agent.js' {
  import type { Agent } from 'undici';
  const AgentClass: typeof Agent;
  export default AgentClass;
}
declare module 'undici/lib/dispatcher/env-http-proxy-agent.js' {
  import type { EnvHttpProxyAgent } from 'undici';
  const EnvHttpProxyAgentClass: typeof EnvHttpProxyAgent;
  export default EnvHttpProxyAgentClass;
}
declare module 'undici/lib/dispatcher/proxy-agent.js' {
  import type { ProxyAgent } from 'undici';
  const ProxyAgentClass: typeof ProxyAgent;
  export default ProxyAgentClass;
}
declare module 'undici/lib/dispatcher/dispatcher.js' {
  import type { Dispatcher } from 'undici';
  const DispatcherClass: typeof Dispatcher;
  export default DispatcherClass;
}
/** Dispatcher.prototype.request and .connect, which undici's main entry puts there. */
declare module 'undici/lib/api/api-request.js' {
  const request: (...args: never[]) => unknown;
  export default request;
}
declare module 'undici/lib/api/api-connect.js' {
  const connect: (...args: never[]) => unknown;
  export default connect;
}
