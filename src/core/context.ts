/**
 * @module core/context
 * Who is acting: resolved by a transport from its credentials, passed to every handler.
 */

/** The identity a request acts as (spec §5, WIRE.md "Identity"). */
export interface OperationContext {
  /** Whether a credential was verified (false when the daemon runs without auth). */
  readonly authenticated: boolean;
  readonly subjectType: string;
  readonly subjectId: string;
  readonly tenantId: string;
  readonly isAdmin: boolean;
  /** Which face and provider produced it, for logs and audit. */
  readonly source: string;
}

export const DEFAULT_TENANT = 'default';

/** The context of a daemon without authentication: anonymous user, default tenant. */
export function anonymousContext(source: string, subject?: { type: string; id: string }, tenantId?: string): OperationContext {
  return Object.freeze({
    authenticated: false,
    subjectType: subject?.type ?? 'user',
    subjectId: subject?.id ?? 'anonymous',
    tenantId: tenantId ?? DEFAULT_TENANT,
    isAdmin: false,
    source,
  });
}

/** Parse `<type>:<id>`; undefined when malformed. */
export function parseSubject(value: string): { type: string; id: string } | undefined {
  const i = value.indexOf(':');
  if (i <= 0 || i === value.length - 1) return undefined;
  return { type: value.slice(0, i).trim(), id: value.slice(i + 1).trim() };
}
