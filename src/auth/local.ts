/**
 * @module auth/local
 * Local mode (spec §5.2): users with bcrypt password hashes in the auth config; `POST
 * /api/auth/login` trades a username and password for an HS256 JWT (default lifetime one hour,
 * spec §8) that later requests present as a bearer token. Config shape:
 * `{"jwt_secret", "token_expiry"?, "users": {"<name>": {"password_hash", "subject_type"?,
 * "subject_id"?, "tenant_id"?, "is_admin"?, "name"?, "metadata"?}}}`.
 */
import bcrypt from 'bcryptjs';
import { jose } from './jose.js';
import { z } from 'zod';
import { AccessDeniedError } from '../core/errors.js';
import { type AuthProvider, type AuthResult, SUBJECT_TYPES, UNAUTHENTICATED } from './types.js';
import { parseAuthConfig } from './config-file.js';

/** bcrypt cost for new hashes (`svc admin create-user`): 2^12 rounds, about 0.3 s in JS. */
export const BCRYPT_ROUNDS = 12;
/** The `iss` and `aud` of local tokens, so that no other JWT is mistaken for one. */
const LOCAL_ISSUER = 'svc-local';

const LocalUserSchema = z.strictObject({
  password_hash: z.string().regex(/^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$/, 'must be a bcrypt hash (svc admin create-user writes one)'),
  subject_type: z.enum(SUBJECT_TYPES).default('user'),
  subject_id: z.string().min(1).optional(),
  tenant_id: z.string().min(1).nullable().default(null),
  is_admin: z.boolean().default(false),
  name: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).default({}),
});

export const LocalConfigSchema = z.strictObject({
  jwt_secret: z.string().min(32, 'must have at least 32 characters (256 bits for HS256)'),
  /** seconds */
  token_expiry: z.number().int().positive().default(3600),
  users: z.record(z.string().min(1), LocalUserSchema).default({}),
});

/** What `POST /api/auth/login` answers (WIRE.md "HTTP routes"). */
export interface LoginResult {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
}

/** A bcrypt hash of `password` for a local-mode config file. */
export function hashPassword(password: string, rounds = BCRYPT_ROUNDS): Promise<string> {
  return bcrypt.hash(password, rounds);
}

export class LocalAuthProvider implements AuthProvider {
  readonly name = 'local';
  readonly #config: z.output<typeof LocalConfigSchema>;
  readonly #secret: Uint8Array;
  /** Compared against when the user does not exist, so that unknown names cost as much as wrong passwords. */
  readonly #decoyHash: string;
  readonly #clock: () => number;

  constructor(config: unknown, opts: { clock?: (() => number) | undefined } = {}) {
    this.#clock = opts.clock ?? Date.now;
    this.#config = parseAuthConfig(LocalConfigSchema, config, 'local');
    this.#secret = new TextEncoder().encode(this.#config.jwt_secret);
    const someUser = Object.values(this.#config.users)[0];
    this.#decoyHash = someUser?.password_hash ?? bcrypt.hashSync('svc-decoy', 4);
  }

  /** Check a password and issue a token; -32003 for an unknown user or a wrong password alike. */
  async login(username: string, password: string): Promise<LoginResult> {
    const user = Object.hasOwn(this.#config.users, username) ? this.#config.users[username] : undefined;
    // The decoy hash keeps unknown users exactly as slow as known ones (no user enumeration by timing).
    const ok = await bcrypt.compare(password, user?.password_hash ?? this.#decoyHash); // constant-time bcrypt comparison
    if (!user || !ok) throw new AccessDeniedError('Invalid username or password');
    const expiresIn = this.#config.token_expiry;
    const { SignJWT } = await jose();
    const token = await new SignJWT({
      subject_type: user.subject_type, subject_id: user.subject_id ?? username, tenant_id: user.tenant_id,
      is_admin: user.is_admin, ...(user.name ? { name: user.name } : {}),
    })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(username)
      .setIssuer(LOCAL_ISSUER)
      .setAudience(LOCAL_ISSUER)
      .setIssuedAt(this.#seconds())
      .setExpirationTime(this.#seconds() + expiresIn)
      .sign(this.#secret);
    return { access_token: token, token_type: 'Bearer', expires_in: expiresIn };
  }

  /**
   * Verify signature, issuer, audience and expiry. The identity comes from the current config, not
   * the token's claims: a user removed or demoted in the config loses access at the next start.
   */
  async authenticate(token: string): Promise<AuthResult> {
    let username: string | undefined;
    try {
      // Signature checked by WebCrypto's HMAC verify, which compares in constant time.
      const { jwtVerify } = await jose();
      const { payload } = await jwtVerify(token, this.#secret, {
        algorithms: ['HS256'], issuer: LOCAL_ISSUER, audience: LOCAL_ISSUER, currentDate: new Date(this.#clock()),
      });
      username = payload.sub;
    } catch {
      return UNAUTHENTICATED;
    }
    const user = username !== undefined && Object.hasOwn(this.#config.users, username) ? this.#config.users[username] : undefined;
    if (!user) return UNAUTHENTICATED;
    const subjectId = user.subject_id ?? username!;
    return {
      authenticated: true, user_id: username!, subject_type: user.subject_type, subject_id: subjectId, tenant_id: user.tenant_id,
      is_admin: user.is_admin, metadata: { ...user.metadata, username, ...(user.name ? { name: user.name } : {}) },
    };
  }

  async validateToken(token: string): Promise<boolean> {
    return (await this.authenticate(token)).authenticated;
  }

  async close(): Promise<void> {}

  /** Now, in the whole seconds JWT times use. */
  #seconds(): number {
    return Math.floor(this.#clock() / 1000);
  }
}
