/**
 * @module auth/oidc
 * OIDC mode (spec §5.2): bearer tokens are JWTs issued by an external OpenID provider, checked
 * against the issuer's published keys (JWKS): signature, `iss`, `aud`, `exp`, `nbf`. No OAuth
 * flow runs here. The JWKS address is `jwks_uri` when configured, otherwise discovered from
 * `<issuer>/.well-known/openid-configuration`. Config shape:
 * `{"issuer", "audience", "jwks_uri"?, "user_id_claim"? ("sub"), "tenant_id_claim"? ("org_id"),
 * "email_claim"? ("email"), "subject_type"? ("user"), "admin_emails"? [], "subject_prefix"?,
 * "algorithms"?, "clock_tolerance"? (seconds, 0)}`.
 */
import type { createRemoteJWKSet, JWTPayload } from 'jose';
import { jose } from './jose.js';
import { z } from 'zod';
import type { Logger } from '../core/log.js';
import { type AuthProvider, type AuthResult, SUBJECT_TYPES, UNAUTHENTICATED } from './types.js';
import { parseAuthConfig } from './config-file.js';

const httpUrl = z.string().url().refine((u) => /^https?:\/\//.test(u), { message: 'must be an http(s) URL' });

export const OidcConfigSchema = z.strictObject({
  issuer: httpUrl,
  audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
  jwks_uri: httpUrl.optional(),
  user_id_claim: z.string().min(1).default('sub'),
  tenant_id_claim: z.string().min(1).default('org_id'),
  email_claim: z.string().min(1).default('email'),
  subject_type: z.enum(SUBJECT_TYPES).default('user'),
  admin_emails: z.array(z.string().min(1)).default([]),
  /** Prepended as `<prefix>:` to user ids, so that equal `sub`s of different issuers stay apart. */
  subject_prefix: z.string().optional(),
  algorithms: z.array(z.string().min(1)).min(1).optional(),
  clock_tolerance: z.number().int().min(0).default(0),
});
export type OidcConfig = z.output<typeof OidcConfigSchema>;

type KeySet = ReturnType<typeof createRemoteJWKSet>;

export class OidcAuthProvider implements AuthProvider {
  /** `oidc`, or the provider's name in multi-oidc. */
  readonly name: string;
  readonly config: OidcConfig;
  readonly #log: Logger | undefined;
  readonly #adminEmails: Set<string>;
  readonly #clock: (() => number) | undefined;
  #keys: Promise<KeySet> | undefined;

  /** `label` names the provider in multi-oidc (logs and `metadata.provider`). */
  constructor(config: unknown, opts: { log?: Logger | undefined; label?: string; clock?: (() => number) | undefined } = {}) {
    this.name = opts.label ?? 'oidc';
    this.config = parseAuthConfig(OidcConfigSchema, config, opts.label ? `multi-oidc (provider ${opts.label})` : 'oidc');
    this.#log = opts.log;
    this.#clock = opts.clock;
    this.#adminEmails = new Set(this.config.admin_emails.map((e) => e.toLowerCase()));
  }

  async authenticate(token: string): Promise<AuthResult> {
    const payload = await this.verify(token);
    return payload ? this.resultOf(payload) : UNAUTHENTICATED;
  }

  async validateToken(token: string): Promise<boolean> {
    return (await this.verify(token)) !== undefined;
  }

  async close(): Promise<void> {}

  /** The verified claims, or undefined for any token that fails a check. */
  async verify(token: string): Promise<JWTPayload | undefined> {
    let keys: KeySet;
    try {
      keys = await this.#keySet();
    } catch (err) {
      this.#log?.warn({ err, issuer: this.config.issuer }, 'OIDC discovery failed; tokens of this issuer are refused');
      return undefined;
    }
    try {
      const { jwtVerify } = await jose();
      const { payload } = await jwtVerify(token, keys, {
        issuer: this.config.issuer,
        audience: this.config.audience,
        clockTolerance: this.config.clock_tolerance,
        ...(this.#clock ? { currentDate: new Date(this.#clock()) } : {}),
        ...(this.config.algorithms ? { algorithms: this.config.algorithms } : {}),
      });
      return payload;
    } catch (err) {
      this.#log?.debug({ err: (err as Error).message, issuer: this.config.issuer }, 'OIDC token refused');
      return undefined;
    }
  }

  /** Map verified claims to an identity with the configured claim names. */
  resultOf(payload: JWTPayload): AuthResult {
    const claim = (name: string) => {
      const v = payload[name];
      return typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined;
    };
    const rawId = claim(this.config.user_id_claim);
    if (rawId === undefined) return UNAUTHENTICATED;
    const userId = this.config.subject_prefix ? `${this.config.subject_prefix}:${rawId}` : rawId;
    const email = claim(this.config.email_claim);
    return {
      authenticated: true,
      user_id: userId,
      subject_type: this.config.subject_type,
      subject_id: userId,
      tenant_id: claim(this.config.tenant_id_claim) ?? null,
      is_admin: email !== undefined && this.#adminEmails.has(email.toLowerCase()),
      metadata: {
        issuer: this.config.issuer, provider: this.name,
        ...(email !== undefined ? { email } : {}), ...(claim('name') !== undefined ? { name: claim('name') } : {}),
      },
    };
  }

  /** The issuer's key set; discovered once (a failed discovery is retried on the next token). */
  #keySet(): Promise<KeySet> {
    this.#keys ??= this.#discover().catch((err) => {
      this.#keys = undefined;
      throw err;
    });
    return this.#keys;
  }

  async #discover(): Promise<KeySet> {
    const { createRemoteJWKSet } = await jose();
    if (this.config.jwks_uri) return createRemoteJWKSet(new URL(this.config.jwks_uri));
    const url = `${this.config.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    const res = await fetch(url, { headers: { Accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`${url} answered HTTP ${res.status}`);
    const doc = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
    // OpenID Connect Discovery §4.3: the document's issuer must be exactly the configured one.
    if (doc.issuer !== this.config.issuer) throw new Error(`${url} names issuer ${String(doc.issuer)}, not ${this.config.issuer}`);
    if (typeof doc.jwks_uri !== 'string') throw new Error(`${url} has no jwks_uri`);
    return createRemoteJWKSet(new URL(doc.jwks_uri));
  }
}
