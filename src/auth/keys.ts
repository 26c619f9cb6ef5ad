/**
 * @module auth/keys
 * API keys kept in the metadata store (spec §2.3 "API key record", §3 "API key", §5.2 database
 * mode) and the append-only audit trail of authentications, failures and key administration.
 *
 * Only a salted HMAC-SHA256 of each key is stored. The salt is a per-installation secret: 32
 * random bytes generated once into a 0600 file in the data directory, kept apart from the
 * hashes so that a copy of the database alone cannot be used to test guessed keys.
 */
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { chmodSync, closeSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import type { MetadataStore, Table } from '../store/types.js';
import { NotFoundError, ValidationError } from '../core/errors.js';
import { type AuthResult, UNAUTHENTICATED } from './types.js';

/** An API key as admins see it: never the raw key, never its hash (spec §2.3). */
export interface ApiKeyRecord {
  key_id: string;
  user_id: string;
  subject_type: string;
  subject_id: string;
  name: string;
  tenant_id: string | null;
  is_admin: boolean;
  created_at: Date;
  expires_at: Date | null;
  revoked: boolean;
  revoked_at: Date | null;
  last_used_at: Date | null;
  /** Free-form; `agents` (array of ids) lists the agents this key may act as. */
  metadata: Record<string, unknown>;
}

/** The creation result: the record fields of spec §4.10 plus the raw key, returned only here. */
export interface CreatedKey {
  key_id: string;
  api_key: string;
  user_id: string;
  name: string;
  subject_type: string;
  subject_id: string;
  tenant_id: string | null;
  is_admin: boolean;
  expires_at: Date | null;
  created_at: Date;
  metadata: Record<string, unknown>;
}

interface StoredKey {
  key_id: string;
  /** hex HMAC-SHA256(installation secret, raw key) */
  key_hash: string;
  user_id: string;
  subject_type: string;
  subject_id: string;
  name: string;
  tenant_id: string | null;
  is_admin: boolean;
  created: number;
  expires: number | null;
  revoked: boolean;
  revoked_ms: number | null;
  last_used: number | null;
  metadata: Record<string, unknown>;
}

/** Audit events, in the order a key lives through them. */
export const AUDIT_EVENTS = ['key.create', 'key.update', 'key.revoke', 'auth.success', 'auth.failure'] as const;
export type AuditEvent = (typeof AUDIT_EVENTS)[number];

/** One line of the audit trail. Never contains a raw key or a hash. */
export interface AuditEntry {
  seq: number;
  at: Date;
  event: AuditEvent;
  key_id: string | null;
  user_id: string | null;
  tenant_id: string | null;
  /** Who did it: `<type>:<id>` of the admin for key.* events; null for authentications. */
  actor: string | null;
  /** Event details: the reason of a failure, the changed fields of an update. */
  detail: Record<string, unknown>;
}

type StoredAudit = Omit<AuditEntry, 'at'> & { at_ms: number };

export interface CreateKeyInput {
  user_id: string;
  name: string;
  is_admin?: boolean;
  /** Days from now; null or absent = never expires. */
  expires_days?: number | null;
  tenant_id?: string | null;
  subject_type?: string;
  subject_id?: string | null;
  metadata?: Record<string, unknown>;
}

export interface UpdateKeyInput {
  name?: string;
  is_admin?: boolean;
  /** Absent = unchanged, null = never expires, n = n days from now. */
  expires_days?: number | null;
  metadata?: Record<string, unknown>;
}

export interface ListKeysQuery {
  user_id?: string;
  tenant_id?: string;
  is_admin?: boolean;
  include_revoked?: boolean;
  include_expired?: boolean;
  limit?: number;
  offset?: number;
}

export interface AuditQuery {
  event?: AuditEvent;
  key_id?: string;
  user_id?: string;
  tenant_id?: string;
  since?: Date;
  until?: Date;
  limit?: number;
  offset?: number;
}

const DAY_MS = 86_400_000;
const SEQ_DIGITS = 15;
/** `sk-<identifier>-<32 hex>`: the identifier is a readable hint of the owner, the hex part the secret. */
const KEY_FORMAT = /^sk-[a-z0-9_]{1,24}-[0-9a-f]{32}$/;
const seqKey = (n: number) => String(n).padStart(SEQ_DIGITS, '0');

/** The identifier part of a new key: the owner's id reduced to `[a-z0-9_]`, at most 12 characters. */
function keyIdentifier(id: string): string {
  const cleaned = id.toLowerCase().replace(/[^a-z0-9_]+/g, '_').replace(/^_+|_+$/g, '').slice(0, 12);
  return cleaned || 'key';
}

export class ApiKeyStore {
  readonly #store: MetadataStore;
  readonly #secretPath: string;
  readonly #keys: Table<StoredKey>;
  readonly #byHash: Table<string>;
  readonly #audit: Table<StoredAudit>;
  readonly #pending = new Set<Promise<unknown>>();
  readonly #onWriteError: (err: unknown) => void;
  readonly #clock: () => number;
  #secret: Buffer | undefined;

  constructor(deps: {
    store: MetadataStore; secretPath: string; onWriteError?: (err: unknown) => void; clock?: (() => number) | undefined;
  }) {
    this.#store = deps.store;
    this.#clock = deps.clock ?? Date.now;
    this.#secretPath = deps.secretPath;
    this.#keys = deps.store.table('api_keys');
    this.#byHash = deps.store.table('api_key_hashes');
    this.#audit = deps.store.table('auth_audit');
    this.#onWriteError = deps.onWriteError ?? (() => undefined);
  }

  /** Check a raw key; records the outcome in the audit trail and `last_used_at` on success. */
  authenticate(rawKey: string, now = this.#clock()): AuthResult {
    const fail = (reason: string, detail: Record<string, unknown>, rec?: StoredKey): AuthResult => {
      this.#background(() => this.#append(now, 'auth.failure', rec ?? null, null, { reason, ...detail }));
      return UNAUTHENTICATED;
    };
    // Nothing of a malformed token is recorded: it may be a password pasted into the wrong place.
    if (!KEY_FORMAT.test(rawKey)) return fail('malformed', {});
    const hash = this.#hash(rawKey);
    const keyId = this.#byHash.get(hash.toString('hex'));
    const rec = keyId === undefined ? undefined : this.#keys.get(keyId);
    if (!rec || !timingSafeEqual(Buffer.from(rec.key_hash, 'hex'), hash)) { // constant-time comparison of the HMACs, never ===
      // The `sk-<identifier>-` part names the owner, not the secret: it helps to tell who is failing.
      return fail('unknown_key', { key_prefix: rawKey.slice(0, rawKey.lastIndexOf('-') + 1) });
    }
    if (rec.revoked) return fail('revoked', {}, rec);
    if (rec.expires !== null && now > rec.expires) return fail('expired', {}, rec);
    this.#background(() => {
      const current = this.#keys.get(rec.key_id);
      this.#append(now, 'auth.success', rec, null, {});
      if (current) this.#keys.put(rec.key_id, { ...current, last_used: now });
    });
    return {
      authenticated: true,
      user_id: rec.user_id,
      subject_type: rec.subject_type,
      subject_id: rec.subject_id,
      tenant_id: rec.tenant_id,
      is_admin: rec.is_admin,
      metadata: { ...rec.metadata, key_id: rec.key_id, key_name: rec.name },
    };
  }

  /** Create a key; the raw key is in the result and nowhere else, ever. */
  async create(input: CreateKeyInput, actor: string | null, now = this.#clock()): Promise<CreatedKey> {
    return (await this.#create(input, actor, now, () => true))!;
  }

  /**
   * Create an admin key for `userId` only when no usable (unrevoked, unexpired) admin key exists:
   * the `--init` bootstrap. Returns undefined when one exists already. Check and creation are one
   * transaction.
   */
  async createFirstAdmin(userId: string, expiresDays: number | null, now = this.#clock()): Promise<CreatedKey | undefined> {
    await this.flush();
    return this.#create(
      { user_id: userId, name: 'initial admin key', is_admin: true, expires_days: expiresDays }, 'system:init', now,
      () => this.#activeAdmins(now).length === 0,
    );
  }

  /** Create a key when `guard()`, checked inside the transaction, allows it. */
  async #create(input: CreateKeyInput, actor: string | null, now: number, guard: () => boolean): Promise<CreatedKey | undefined> {
    const subjectType = input.subject_type ?? 'user';
    const subjectId = input.subject_id ?? input.user_id;
    const identifier = keyIdentifier(subjectType === 'agent' ? subjectId : input.user_id);
    // 128 bits from the OS CSPRNG: the part of the key nobody can guess.
    const apiKey = `sk-${identifier}-${randomBytes(16).toString('hex')}`;
    const hash = this.#hash(apiKey).toString('hex');
    const rec: StoredKey = {
      key_id: randomUUID(),
      key_hash: hash,
      user_id: input.user_id,
      subject_type: subjectType,
      subject_id: subjectId,
      name: input.name,
      tenant_id: input.tenant_id === undefined ? 'default' : input.tenant_id,
      is_admin: input.is_admin ?? false,
      created: now,
      expires: expiryOf(input.expires_days ?? null, now),
      revoked: false,
      revoked_ms: null,
      last_used: null,
      metadata: input.metadata ?? {},
    };
    const written = await this.#track(this.#store.transact(() => {
      if (!guard()) return false;
      if (this.#byHash.get(hash) !== undefined) throw new Error('API key hash collision'); // 2^-128: a broken RNG, not bad luck
      this.#keys.put(rec.key_id, rec);
      this.#byHash.put(hash, rec.key_id);
      this.#append(now, 'key.create', rec, actor, { name: rec.name, is_admin: rec.is_admin, expires_at: isoOrNull(rec.expires) });
      return true;
    }));
    if (!written) return undefined;
    const { created_at, expires_at, key_id, user_id, name, subject_type, subject_id, tenant_id, is_admin, metadata } = toRecord(rec);
    return { key_id, api_key: apiKey, user_id, name, subject_type, subject_id, tenant_id, is_admin, expires_at, created_at, metadata };
  }

  get(keyId: string): ApiKeyRecord {
    const rec = this.#keys.get(keyId);
    if (!rec) throw new NotFoundError(`API key not found: ${keyId}`, { id: keyId });
    return toRecord(rec);
  }

  /** Matching keys, oldest first; `total` counts every match, not the page. */
  list(q: ListKeysQuery = {}, now = this.#clock()): { keys: ApiKeyRecord[]; total: number } {
    const matches: StoredKey[] = [];
    for (const { value } of this.#keys.range({})) {
      if (q.user_id !== undefined && value.user_id !== q.user_id) continue;
      if (q.tenant_id !== undefined && value.tenant_id !== q.tenant_id) continue;
      if (q.is_admin !== undefined && value.is_admin !== q.is_admin) continue;
      if (!q.include_revoked && value.revoked) continue;
      if (!q.include_expired && value.expires !== null && now > value.expires) continue;
      matches.push(value);
    }
    matches.sort((a, b) => a.created - b.created || (a.key_id < b.key_id ? -1 : 1));
    const offset = q.offset ?? 0;
    const limit = q.limit ?? 100;
    return { keys: matches.slice(offset, offset + limit).map(toRecord), total: matches.length };
  }

  /**
   * Whether `userId` holds a usable (unrevoked, unexpired) agent key for `agentId` in `tenantId`:
   * what makes the agent that user's own (X-Svc-Subject). A scan: keys are few.
   */
  hasAgentKey(userId: string, tenantId: string | null, agentId: string, now = this.#clock()): boolean {
    for (const { value } of this.#keys.range({})) {
      if (value.subject_type === 'agent' && value.subject_id === agentId && value.user_id === userId && value.tenant_id === tenantId
        && !value.revoked && (value.expires === null || now <= value.expires)) return true;
    }
    return false;
  }

  /**
   * Revoke a key (irreversible; spec §3). Revoking an already revoked key changes nothing. The
   * last usable admin key cannot be revoked: that would leave nobody able to administer keys.
   */
  async revoke(keyId: string, actor: string | null, now = this.#clock()): Promise<ApiKeyRecord> {
    await this.flush();
    return this.#track(this.#store.transact(() => {
      const rec = this.#keys.get(keyId);
      if (!rec) throw new NotFoundError(`API key not found: ${keyId}`, { id: keyId });
      if (rec.revoked) return toRecord(rec);
      if (this.#isLastAdmin(rec, now)) {
        throw new ValidationError('Cannot revoke the last admin key: create another admin key first', { id: keyId });
      }
      const next: StoredKey = { ...rec, revoked: true, revoked_ms: now };
      this.#keys.put(keyId, next);
      this.#append(now, 'key.revoke', next, actor, {});
      return toRecord(next);
    }));
  }

  /** Change name, admin flag, expiry or metadata of an unrevoked key (spec §3 "API key"). */
  async update(keyId: string, changes: UpdateKeyInput, actor: string | null, now = this.#clock()): Promise<ApiKeyRecord> {
    await this.flush();
    return this.#track(this.#store.transact(() => {
      const rec = this.#keys.get(keyId);
      if (!rec) throw new NotFoundError(`API key not found: ${keyId}`, { id: keyId });
      if (rec.revoked) throw new ValidationError(`API key is revoked and cannot change: ${keyId}`, { id: keyId });
      if (changes.is_admin === false && rec.is_admin && this.#isLastAdmin(rec, now)) {
        throw new ValidationError('Cannot remove admin privileges from the last admin key', { id: keyId });
      }
      const next: StoredKey = { ...rec };
      const detail: Record<string, unknown> = {};
      if (changes.name !== undefined) next.name = detail.name = changes.name;
      if (changes.is_admin !== undefined) next.is_admin = detail.is_admin = changes.is_admin;
      if (changes.expires_days !== undefined) {
        next.expires = expiryOf(changes.expires_days, now);
        detail.expires_at = isoOrNull(next.expires);
      }
      if (changes.metadata !== undefined) next.metadata = detail.metadata = changes.metadata;
      this.#keys.put(keyId, next);
      this.#append(now, 'key.update', next, actor, detail);
      return toRecord(next);
    }));
  }

  /** Audit entries, newest first; `total` counts every match. */
  audit(q: AuditQuery = {}): { entries: AuditEntry[]; total: number } {
    const offset = q.offset ?? 0;
    const limit = q.limit ?? 100;
    const entries: AuditEntry[] = [];
    let total = 0;
    for (const { value } of this.#audit.range({ reverse: true })) {
      if (q.event !== undefined && value.event !== q.event) continue;
      if (q.key_id !== undefined && value.key_id !== q.key_id) continue;
      if (q.user_id !== undefined && value.user_id !== q.user_id) continue;
      if (q.tenant_id !== undefined && value.tenant_id !== q.tenant_id) continue;
      if (q.until !== undefined && value.at_ms > q.until.getTime()) continue;
      if (q.since !== undefined && value.at_ms < q.since.getTime()) {
        // Newest first: once well before `since`, all the rest is older too (the slack covers lines
        // whose time was taken a little before their commit).
        if (value.at_ms < q.since.getTime() - 60_000) break;
        continue;
      }
      if (total >= offset && entries.length < limit) {
        const { at_ms, ...rest } = value;
        entries.push({ ...rest, at: new Date(at_ms) });
      }
      total++;
    }
    return { entries, total };
  }

  /** Wait until every background write (last_used_at, audit lines) is committed. */
  async flush(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  /** Keys that can authenticate now and carry admin rights. */
  #activeAdmins(now: number): StoredKey[] {
    const out: StoredKey[] = [];
    for (const { value } of this.#keys.range({})) {
      if (value.is_admin && !value.revoked && (value.expires === null || now <= value.expires)) out.push(value);
    }
    return out;
  }

  /** Whether `rec` is a usable admin key and no other usable admin key exists. */
  #isLastAdmin(rec: StoredKey, now: number): boolean {
    const admins = this.#activeAdmins(now);
    return admins.length > 0 && admins.every((a) => a.key_id === rec.key_id);
  }

  /** Append one audit line; only inside a transaction (the sequence is read and written in it). */
  #append(now: number, event: AuditEvent, rec: StoredKey | null, actor: string | null, detail: Record<string, unknown>): void {
    let last = 0;
    for (const key of this.#audit.keys({ reverse: true, limit: 1 })) last = Number(key);
    const seq = last + 1;
    this.#audit.put(seqKey(seq), {
      seq, at_ms: now, event, key_id: rec?.key_id ?? null, user_id: rec?.user_id ?? null, tenant_id: rec?.tenant_id ?? null,
      actor, detail,
    });
  }

  /** A write nobody awaits (authentication must not wait for a commit); flush() and close() do. */
  #background(fn: () => void): void {
    this.#track(this.#store.transact(fn)).catch((err) => this.#onWriteError(err));
  }

  #track<T>(p: Promise<T>): Promise<T> {
    this.#pending.add(p);
    const done = () => this.#pending.delete(p);
    p.then(done, done);
    return p;
  }

  #hash(rawKey: string): Buffer {
    return createHmac('sha256', this.#installationSecret()).update(rawKey, 'utf8').digest();
  }

  /** The per-installation salt: read once, created on first use with mode 0600. */
  #installationSecret(): Buffer {
    if (this.#secret) return this.#secret;
    let fd: number | undefined;
    try {
      fd = openSync(this.#secretPath, 'wx', 0o600);
      writeSync(fd, randomBytes(32).toString('hex') + '\n');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    if ((statSync(this.#secretPath).mode & 0o077) !== 0) chmodSync(this.#secretPath, 0o600);
    const text = readFileSync(this.#secretPath, 'utf8').trim();
    if (!/^[0-9a-f]{64}$/.test(text)) throw new Error(`${this.#secretPath} is not an svc key secret (64 hex characters expected)`);
    this.#secret = Buffer.from(text, 'hex');
    return this.#secret;
  }
}

function expiryOf(days: number | null, now: number): number | null {
  return days === null ? null : now + days * DAY_MS;
}

function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

function toRecord(rec: StoredKey): ApiKeyRecord {
  return {
    key_id: rec.key_id,
    user_id: rec.user_id,
    subject_type: rec.subject_type,
    subject_id: rec.subject_id,
    name: rec.name,
    tenant_id: rec.tenant_id,
    is_admin: rec.is_admin,
    created_at: new Date(rec.created),
    expires_at: rec.expires === null ? null : new Date(rec.expires),
    revoked: rec.revoked,
    revoked_at: rec.revoked_ms === null ? null : new Date(rec.revoked_ms),
    last_used_at: rec.last_used === null ? null : new Date(rec.last_used),
    metadata: rec.metadata,
  };
}
