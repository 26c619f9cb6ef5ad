/**
 * @module auth/types
 * The authentication seam (spec §5.2). A provider turns a bearer token into an AuthResult; the
 * {@link Authenticator} turns request headers into an OperationContext. Later modes (database,
 * static, local, oidc, multi-oidc) implement {@link AuthProvider}.
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
  authenticate(token: string): Promise<AuthResult>;
  validateToken(token: string): Promise<boolean>;
  close(): Promise<void>;
}

export const UNAUTHENTICATED: AuthResult = Object.freeze({
  authenticated: false, user_id: null, subject_type: 'user', subject_id: null, tenant_id: null, is_admin: false, metadata: null,
});
