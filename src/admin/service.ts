/**
 * @module admin/service
 * API key administration (spec §4.10, §3 "API key") and the audit trail, over the database
 * mode's {@link ApiKeyStore}. Only database mode has keys to administer: in every other mode each
 * call is -32005 saying so. Callers are admins (the dispatcher refuses others with -32004 before
 * a call gets here); admins are installation-wide, so they see keys of every tenant.
 */
import type { OperationContext } from '../core/context.js';
import { ValidationError } from '../core/errors.js';
import type {
  ApiKeyRecord, ApiKeyStore, AuditEntry, AuditQuery, CreateKeyInput, CreatedKey, ListKeysQuery, UpdateKeyInput,
} from '../auth/keys.js';

export class AdminService {
  readonly #keys: ApiKeyStore;
  readonly #authType: string | undefined;

  /** `authType` is the daemon's auth mode; key administration is live only for `database`. */
  constructor(deps: { keys: ApiKeyStore; authType: string | undefined }) {
    this.#keys = deps.keys;
    this.#authType = deps.authType;
  }

  async createKey(input: CreateKeyInput, ctx: OperationContext): Promise<CreatedKey> {
    return this.#live().create(input, actorOf(ctx));
  }

  async listKeys(q: ListKeysQuery): Promise<{ keys: ApiKeyRecord[]; total: number }> {
    const keys = this.#live();
    await keys.flush(); // last_used_at of requests already answered
    return keys.list(q);
  }

  async getKey(keyId: string): Promise<ApiKeyRecord> {
    const keys = this.#live();
    await keys.flush();
    return keys.get(keyId);
  }

  async revokeKey(keyId: string, ctx: OperationContext): Promise<{ success: true; key_id: string }> {
    await this.#live().revoke(keyId, actorOf(ctx));
    return { success: true, key_id: keyId };
  }

  async updateKey(keyId: string, changes: UpdateKeyInput, ctx: OperationContext): Promise<ApiKeyRecord> {
    return this.#live().update(keyId, changes, actorOf(ctx));
  }

  async audit(q: AuditQuery): Promise<{ entries: AuditEntry[]; total: number }> {
    const keys = this.#live();
    await keys.flush();
    return keys.audit(q);
  }

  /** `svc serve --auth-type database --init`: the first admin key, or undefined when one exists. */
  initFirstAdmin(userId: string, expiresDays: number | null): Promise<CreatedKey | undefined> {
    return this.#live().createFirstAdmin(userId, expiresDays);
  }

  #live(): ApiKeyStore {
    if (this.#authType !== 'database') {
      throw new ValidationError(
        `Key administration needs --auth-type database (this daemon runs ${this.#authType ? `with --auth-type ${this.#authType}` : 'without authentication'})`,
      );
    }
    return this.#keys;
  }
}

function actorOf(ctx: OperationContext): string {
  return `${ctx.subjectType}:${ctx.subjectId}`;
}
