/**
 * @module auth/simple
 * The spec's simple API key mode: one key, no users, no expiry. The key holder owns the daemon,
 * so a valid key is an admin (WIRE.md "Settled details").
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { type AuthProvider, type AuthResult, UNAUTHENTICATED } from './types.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

export class SimpleKeyProvider implements AuthProvider {
  readonly name = 'simple';
  readonly #expected: Buffer;

  constructor(apiKey: string) {
    this.#expected = digest(apiKey);
  }

  async authenticate(token: string): Promise<AuthResult> {
    return (await this.validateToken(token))
      ? { authenticated: true, user_id: 'admin', subject_type: 'user', subject_id: 'admin', tenant_id: null, is_admin: true, metadata: null }
      : UNAUTHENTICATED;
  }

  async validateToken(token: string): Promise<boolean> {
    // Constant time: compare fixed-length digests so neither content nor length leaks.
    return timingSafeEqual(digest(token), this.#expected);
  }

  async close(): Promise<void> {}
}
