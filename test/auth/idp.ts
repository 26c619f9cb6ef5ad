/**
 * @module test/auth/idp
 * A real OpenID provider (the certified `oidc-provider` package) on loopback for the OIDC tests.
 * Tokens come from its token endpoint: the client_credentials grant with a resource indicator,
 * which yields a signed JWT access token whose audience the resource server chooses.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

/** Resource indicators the IdP knows: the svc audience, another audience, and a 60-second token. */
export const RESOURCE = { svc: 'https://svc.test/api', other: 'https://other.test/api', short: 'https://svc.test/short' } as const;
export const AUDIENCE = 'svc-api';

export interface Idp {
  issuer: string;
  jwksUri: string;
  /** A JWT access token for `client` (`ops` carries org_id and an email, `plain` neither). */
  token(client: 'ops' | 'plain', resource?: string): Promise<string>;
  close(): Promise<void>;
}

const CLIENTS = {
  ops: { secret: 'ops-secret-0123456789', claims: { org_id: 'acme', email: 'Ops@Example.com', name: 'Ops Robot' } },
  plain: { secret: 'plain-secret-0123456789', claims: {} },
} as const;

/**
 * Start an IdP. `issuer` overrides the issuer it claims (a rogue IdP impersonating another);
 * `kid` fixes the key id (the rogue uses the victim's).
 */
export async function startIdp(opts: { issuer?: string; kid?: string } = {}): Promise<Idp> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const issuer = opts.issuer ?? base;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: opts.kid ?? 'key-1', alg: 'RS256', use: 'sig' };
  const provider = new Provider(issuer, {
    clients: Object.entries(CLIENTS).map(([id, c]) => ({
      client_id: id, client_secret: c.secret, grant_types: ['client_credentials'], redirect_uris: [], response_types: [],
      token_endpoint_auth_method: 'client_secret_post',
    })),
    jwks: { keys: [jwk] },
    scopes: ['api'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => RESOURCE.svc,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => {
          if (!Object.values(RESOURCE).includes(resource as never)) throw new Error(`unknown resource ${resource}`);
          return {
            scope: 'api',
            audience: resource === RESOURCE.other ? 'other-api' : AUDIENCE,
            accessTokenTTL: resource === RESOURCE.short ? 60 : 300,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    ttl: { ClientCredentials: (_ctx: unknown, token: { resourceServer?: { accessTokenTTL?: number } }) => token.resourceServer?.accessTokenTTL ?? 300 },
    extraTokenClaims: (_ctx: unknown, token: { clientId: keyof typeof CLIENTS }) => CLIENTS[token.clientId]?.claims,
  });
  provider.on('server_error', (_ctx: unknown, err: Error) => console.error('oidc-provider:', err));
  server.on('request', provider.callback());
  return {
    issuer,
    jwksUri: `${base}/jwks`,
    async token(client, resource = RESOURCE.svc) {
      const res = await fetch(`${base}/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials', client_id: client, client_secret: CLIENTS[client].secret, scope: 'api', resource,
        }),
      });
      const body = (await res.json()) as { access_token?: string; error?: string; error_description?: string };
      if (!body.access_token) throw new Error(`token endpoint: ${res.status} ${body.error}: ${body.error_description}`);
      return body.access_token;
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
