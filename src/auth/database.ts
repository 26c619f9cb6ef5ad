/**
 * @module auth/database
 * Database key mode (spec §5.2): keys live in the metadata store ({@link ApiKeyStore}), with
 * users, tenants, expiry, revocation, `last_used_at` and an audit trail. `SVC_DATABASE_URL`
 * names the store: unset or `lmdb:` is the embedded one (config checks that).
 */
import type { ApiKeyStore } from './keys.js';
import type { AuthProvider, AuthResult } from './types.js';

export class DatabaseKeyProvider implements AuthProvider {
  readonly name = 'database';
  readonly #keys: ApiKeyStore;

  constructor(keys: ApiKeyStore) {
    this.#keys = keys;
  }

  async authenticate(token: string): Promise<AuthResult> {
    return this.#keys.authenticate(token);
  }

  /** An agent is the user's when a live agent key was issued to that user in its tenant. */
  ownsAgent(owner: AuthResult, agentId: string): boolean {
    return owner.user_id !== null && this.#keys.hasAgentKey(owner.user_id, owner.tenant_id, agentId);
  }

  async validateToken(token: string): Promise<boolean> {
    return this.#keys.authenticate(token).authenticated;
  }

  /** Let the pending `last_used_at` and audit writes commit; the store itself belongs to the daemon. */
  async close(): Promise<void> {
    await this.#keys.flush();
  }
}
