/**
 * @module auth/types
 * The authentication seam (spec §5.2). A provider turns a bearer token into an AuthResult; the
 * {@link Authenticator} turns request headers into an OperationContext. Every server mode
 * (simple, database, static, local, oidc, multi-oidc) implements {@link AuthProvider}; the
 * factory in `auth/factory` picks one.
 */

/** The server modes of spec §5.2, as `svc serve --auth-type` names them. */
export const AUTH_TYPES = ['simple', 'database', 'static', 'local', 'oidc', 'multi-oidc'] as const;
export type AuthType = (typeof AUTH_TYPES)[number];

/** Subject types a credential may carry (spec §2.4, §5.2 local mode). */
export const SUBJECT_TYPES = ['user', 'agent', 'service', 'session'] as const;

/**
 * What a provider says about a token (spec §5.2), plus the subject it acts as. `metadata.agents`
 * (an array of agent ids) lists the agents a user credential may act as via `X-Svc-Subject`.
 */
export interface AuthResult {
  authenticated: boolean;
  user_id: string | null;
  subject_type: string;
  subject_id: string | null;
  tenant_id: string | null;
  is_admin: boolean;
  metadata: Record<string, unknown> | null;
}

export interface AuthProvider {
  /** Provider name for logs and `source` in contexts. */
  readonly name: string;
  /** Never throws for a bad token: an unauthenticated result instead. */
  authenticate(token: string): Promise<AuthResult>;
  validateToken(token: string): Promise<boolean>;
  /**
   * Whether the agent `agentId` belongs to the user `owner` authenticated as, beyond the agents its
   * credential lists in `metadata.agents`: in database and static modes, an agent key issued for
   * the user (`user_id` the user, `subject_type` agent) makes that agent the user's own.
   */
  ownsAgent?(owner: AuthResult, agentId: string): boolean;
  /** Finish pending work (audit writes, key set refreshes); the provider is unusable afterwards. */
  close(): Promise<void>;
}

export const UNAUTHENTICATED: AuthResult = Object.freeze({
  authenticated: false, user_id: null, subject_type: 'user', subject_id: null, tenant_id: null, is_admin: false, metadata: null,
});
