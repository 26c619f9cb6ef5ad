/**
 * @module auth/multi-oidc
 * Multi-OIDC mode (spec §5.2): several issuers at once. Config: `{"providers": {"<name>": <oidc
 * config>}}`. The token's (unverified) `iss` claim picks the one provider that then verifies it
 * completely; a token from an unknown issuer is refused without any network traffic. User ids are
 * prefixed with the provider name (`<name>:<sub>`) unless the provider sets `subject_prefix`, so
 * that equal `sub` values of two issuers never become the same user.
 */
import { jose } from './jose.js';
import { z } from 'zod';
import type { Logger } from '../core/log.js';
import { type AuthProvider, type AuthResult, UNAUTHENTICATED } from './types.js';
import { parseAuthConfig } from './config-file.js';
import { OidcAuthProvider } from './oidc.js';

const MultiOidcConfigSchema = z.strictObject({
  providers: z.record(z.string().regex(/^[A-Za-z0-9_.-]+$/, 'provider names use letters, digits, _ . -'), z.record(z.string(), z.unknown()))
    .refine((p) => Object.keys(p).length > 0, { message: 'at least one provider is required' }),
});

export class MultiOidcAuthProvider implements AuthProvider {
  readonly name = 'multi-oidc';
  readonly #byIssuer = new Map<string, OidcAuthProvider>();

  constructor(config: unknown, opts: { log?: Logger | undefined; clock?: (() => number) | undefined } = {}) {
    const { providers } = parseAuthConfig(MultiOidcConfigSchema, config, 'multi-oidc');
    for (const [label, raw] of Object.entries(providers)) {
      const provider = new OidcAuthProvider({ subject_prefix: label, ...raw }, { log: opts.log, label, clock: opts.clock });
      if (this.#byIssuer.has(provider.config.issuer)) {
        throw new Error(`invalid auth_config for multi-oidc authentication: two providers name issuer ${provider.config.issuer}`);
      }
      this.#byIssuer.set(provider.config.issuer, provider);
    }
  }

  async authenticate(token: string): Promise<AuthResult> {
    return (await (await this.#pick(token))?.authenticate(token)) ?? UNAUTHENTICATED;
  }

  async validateToken(token: string): Promise<boolean> {
    return (await (await this.#pick(token))?.validateToken(token)) ?? false;
  }

  async close(): Promise<void> {
    for (const p of this.#byIssuer.values()) await p.close();
  }

  /** The provider whose issuer the token claims; only a hint: that provider verifies everything. */
  async #pick(token: string): Promise<OidcAuthProvider | undefined> {
    const { decodeJwt } = await jose();
    let iss: unknown;
    try {
      iss = decodeJwt(token).iss;
    } catch {
      return undefined;
    }
    return typeof iss === 'string' ? this.#byIssuer.get(iss) : undefined;
  }
}
