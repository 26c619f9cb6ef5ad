/**
 * @module auth/authenticator
 * Headers → OperationContext, the same for every HTTP-based face (RPC, WebSocket, MCP HTTP).
 * WIRE.md "Identity": identity headers select the acting subject only where the credential
 * allows it; without auth they are taken as given.
 */
import { AccessDeniedError, PermissionDeniedError } from '../core/errors.js';
import { type OperationContext, DEFAULT_TENANT, anonymousContext, parseSubject } from '../core/context.js';
import type { AuthProvider, AuthResult } from './types.js';

export interface CredentialHeaders {
  authorization?: string | undefined;
  'x-api-key'?: string | undefined;
  'x-svc-subject'?: string | undefined;
  'x-svc-tenant-id'?: string | undefined;
}

export class Authenticator {
  constructor(private readonly provider: AuthProvider | undefined) {}

  get enabled(): boolean {
    return this.provider !== undefined;
  }

  /** Resolve the caller; -32003 when auth is on and the credential is missing, malformed or wrong. */
  async resolve(headers: CredentialHeaders, source: string): Promise<OperationContext> {
    const subjectHeader = headers['x-svc-subject'];
    const subject = subjectHeader ? parseSubject(subjectHeader) : undefined;
    const malformed = () => new PermissionDeniedError(`Malformed X-Svc-Subject header: expected <type>:<id>`);
    const tenantHeader = headers['x-svc-tenant-id'] || undefined;
    if (!this.provider) {
      if (subjectHeader && !subject) throw malformed();
      return anonymousContext(source, subject, tenantHeader);
    }

    // Authentication comes first: without a valid credential the answer is -32003, whatever else was sent.
    const token = bearerToken(headers);
    const result = await this.provider.authenticate(token);
    if (!result.authenticated) throw new AccessDeniedError('Invalid or expired token');
    if (subjectHeader && !subject) throw malformed();
    const own = { type: result.subject_type, id: result.subject_id ?? result.user_id ?? 'unknown' };
    // An admin may act as anyone; anyone else only as itself or, a user, as one of its own agents.
    if (subject && !result.is_admin && !mayActAs(this.provider, result, own, subject)) {
      throw new PermissionDeniedError(`Credential may not act as ${subject.type}:${subject.id}`);
    }
    // A credential's tenant is its context tenant; only an admin may choose another one.
    const ownTenant = result.tenant_id ?? DEFAULT_TENANT;
    if (tenantHeader !== undefined && !result.is_admin && tenantHeader !== ownTenant) {
      throw new PermissionDeniedError(`Credential may not act in tenant ${tenantHeader}`);
    }
    const acting = subject ?? own;
    return Object.freeze({
      authenticated: true,
      subjectType: acting.type,
      subjectId: acting.id,
      tenantId: (result.is_admin ? tenantHeader : undefined) ?? ownTenant,
      isAdmin: result.is_admin,
      source: `${source}:${this.provider.name}`,
    });
  }

  async close(): Promise<void> {
    await this.provider?.close();
  }
}

/**
 * Whether a non-admin credential may act as `subject`: itself, or for a user credential an agent
 * of its own. Until the agent registry exists, a user's agents are those its credential lists in
 * `metadata.agents`, and those the provider knows as the user's (agent keys issued to the user).
 */
function mayActAs(provider: AuthProvider, result: AuthResult, own: { type: string; id: string }, subject: { type: string; id: string }): boolean {
  if (subject.type === own.type && subject.id === own.id) return true;
  if (own.type !== 'user' || subject.type !== 'agent') return false;
  const agents = result.metadata?.agents;
  if (Array.isArray(agents) && agents.includes(subject.id)) return true;
  return provider.ownsAgent?.(result, subject.id) ?? false;
}

/** The bearer token of a request; -32003 when missing or malformed. `X-API-Key` is accepted too. */
function bearerToken(headers: CredentialHeaders): string {
  const auth = headers.authorization;
  if (auth !== undefined) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (!m) throw new AccessDeniedError('Invalid or expired token: malformed Authorization header');
    return m[1]!;
  }
  const key = headers['x-api-key'];
  if (key) return key;
  throw new AccessDeniedError('Invalid or expired token: missing Authorization header');
}
