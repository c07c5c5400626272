/** Where managed identity tokens are asked, and the proxy bypass for that endpoint. */
import { describe, expect, it } from 'vitest';
import { bypassProxyForTokenEndpoint, tokenEndpointFollowsImds, usesEntraId } from '../../src/azure/credentials.ts';

const withCredential = { sinks: [{ type: 'webhook' }, { type: 'eventgrid', credential: { kind: 'managedIdentity' } }] };

describe('the managed identity token endpoint', () => {
  it('follows a non-Azure imds.endpoint when a credential is configured and the environment names none', () => {
    const env: NodeJS.ProcessEnv = {};
    expect(tokenEndpointFollowsImds('http://127.0.0.1:8080/', withCredential, env)).toBe('http://127.0.0.1:8080');
    expect(env.AZURE_POD_IDENTITY_AUTHORITY_HOST).toBe('http://127.0.0.1:8080');
  });

  it("leaves the environment alone for Azure's IMDS, an endpoint already named, or no credential", () => {
    const azure: NodeJS.ProcessEnv = {};
    expect(tokenEndpointFollowsImds('http://169.254.169.254', withCredential, azure)).toBeNull();
    expect(azure).toEqual({});
    const named: NodeJS.ProcessEnv = { AZURE_POD_IDENTITY_AUTHORITY_HOST: 'http://10.0.0.9' };
    expect(tokenEndpointFollowsImds('http://127.0.0.1:8080', withCredential, named)).toBeNull();
    expect(named.AZURE_POD_IDENTITY_AUTHORITY_HOST).toBe('http://10.0.0.9');
    const none: NodeJS.ProcessEnv = {};
    expect(tokenEndpointFollowsImds('http://127.0.0.1:8080', { sinks: [{ type: 'webhook', auth: { bearer: 'x' } }] }, none)).toBeNull();
    expect(none).toEqual({});
  });

  it('finds a credential anywhere in the configuration: a sink, a webhook auth, the approval inbox', () => {
    expect(usesEntraId({ sinks: [{ auth: { kind: 'default', scope: 'api://x/.default' } }] })).toBe(true);
    expect(usesEntraId({ approval: { inbox: { credential: { kind: 'managedIdentity', clientId: 'x' } } } })).toBe(true);
    expect(usesEntraId({ sinks: [{ connectionString: 'Endpoint=sb://x' }], approval: { rules: [] } })).toBe(false);
  });

  it('adds the token endpoint to NO_PROXY once, keeping what was there', () => {
    const env: NodeJS.ProcessEnv = { no_proxy: 'internal.example, .corp', AZURE_POD_IDENTITY_AUTHORITY_HOST: 'http://127.0.0.1:8080' };
    bypassProxyForTokenEndpoint(env);
    bypassProxyForTokenEndpoint(env);
    expect(env.NO_PROXY).toBe('internal.example,.corp,169.254.169.254,127.0.0.1');
    expect(env.no_proxy).toBe(env.NO_PROXY);
  });
});
