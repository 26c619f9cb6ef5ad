/**
 * @module auth/static
 * Static key mode (spec §5.2): keys listed in the auth config, each with its user, tenant (null =
 * single tenant), admin flag and metadata. Config shape:
 * `{"api_keys": {"<key>": {"user_id", "tenant_id", "is_admin", "metadata", "subject_type", "subject_id"}}}`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { type AuthProvider, type AuthResult, SUBJECT_TYPES, UNAUTHENTICATED } from './types.js';
import { parseAuthConfig } from './config-file.js';

const StaticKeySchema = z.strictObject({
  user_id: z.string().min(1).optional(),
  subject_type: z.enum(SUBJECT_TYPES).default('user'),
  subject_id: z.string().min(1).optional(),
  tenant_id: z.string().min(1).nullable().default(null),
  is_admin: z.boolean().default(false),
  metadata: z.record(z.string(), z.unknown()).default({}),
}).refine((k) => k.user_id !== undefined || k.subject_id !== undefined, { message: 'user_id or subject_id is required' });

export const StaticConfigSchema = z.strictObject({
  api_keys: z.record(z.string().min(16, 'a key must have at least 16 characters'), StaticKeySchema)
    .refine((keys) => Object.keys(keys).length > 0, { message: 'at least one key is required' }),
});

const agentKey = (tenant: string | null, user: string, agent: string) => `${tenant ?? ''}\0${user}\0${agent}`;
const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

interface Entry {
  digest: Buffer;
  result: AuthResult;
}

export class StaticKeyProvider implements AuthProvider {
  readonly name = 'static';
  readonly #entries: Entry[];
  /** `<tenant>\0<user>\0<agent>` for every agent key listed for a user. */
  readonly #agentsOfUsers = new Set<string>();

  constructor(config: unknown) {
    const { api_keys } = parseAuthConfig(StaticConfigSchema, config, 'static');
    this.#entries = Object.entries(api_keys).map(([key, k]) => {
      const userId = k.user_id ?? k.subject_id!;
      if (k.subject_type === 'agent' && k.user_id !== undefined && k.subject_id !== undefined) {
        this.#agentsOfUsers.add(agentKey(k.tenant_id, k.user_id, k.subject_id));
      }
      return {
        digest: digest(key),
        result: Object.freeze({
          authenticated: true, user_id: userId, subject_type: k.subject_type, subject_id: k.subject_id ?? userId,
          tenant_id: k.tenant_id, is_admin: k.is_admin, metadata: k.metadata,
        }),
      };
    });
  }

  async authenticate(token: string): Promise<AuthResult> {
    const d = digest(token);
    let found: AuthResult | undefined;
    // Every configured key is compared, with no early exit, so timing tells nothing about which matched.
    for (const e of this.#entries) if (timingSafeEqual(e.digest, d)) found = e.result; // constant time: fixed-length digests
    return found ?? UNAUTHENTICATED;
  }

  /** An agent is the user's when the config lists an agent key with that user_id (same tenant). */
  ownsAgent(owner: AuthResult, agentId: string): boolean {
    return owner.user_id !== null && this.#agentsOfUsers.has(agentKey(owner.tenant_id, owner.user_id, agentId));
  }

  async validateToken(token: string): Promise<boolean> {
    return (await this.authenticate(token)).authenticated;
  }

  async close(): Promise<void> {}
}
