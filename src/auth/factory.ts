/**
 * @module auth/factory
 * `createAuthProvider(authType, authConfig, options)` (spec §5.2): one provider per server mode,
 * or undefined when no auth type is given (the daemon then runs without authentication).
 * Error texts follow the upstream factory: "auth_config is required for <type> authentication",
 * "a session factory is required for database authentication", "Unknown auth_type: <type>".
 */
import { z } from 'zod';
import type { Logger } from '../core/log.js';
import type { AuthProvider } from './types.js';
import type { ApiKeyStore } from './keys.js';
import { parseAuthConfig } from './config-file.js';
import { SimpleKeyProvider } from './simple.js';
import { DatabaseKeyProvider } from './database.js';
import { StaticKeyProvider } from './static.js';
import { LocalAuthProvider } from './local.js';
import { OidcAuthProvider } from './oidc.js';
import { MultiOidcAuthProvider } from './multi-oidc.js';

export interface AuthProviderOptions {
  /**
   * Database mode's key store over the metadata store. It plays the part of the upstream's
   * "session factory", whose name the error text keeps.
   */
  store?: ApiKeyStore | undefined;
  log?: Logger | undefined;
  /** Milliseconds since the epoch for token lifetimes (default Date.now; tests move it instead of sleeping). */
  clock?: (() => number) | undefined;
}

const SimpleConfigSchema = z.strictObject({ api_key: z.string().min(1) });
/** Database mode takes no settings today; an empty object is accepted so that a typo is reported. */
const DatabaseConfigSchema = z.strictObject({});

export function createAuthProvider(
  authType: string | null | undefined,
  authConfig?: Readonly<Record<string, unknown>> | null,
  options: AuthProviderOptions = {},
): AuthProvider | undefined {
  if (authType === undefined || authType === null) return undefined;
  const required = () => {
    if (authConfig === undefined || authConfig === null) throw new Error(`auth_config is required for ${authType} authentication`);
    return authConfig;
  };
  switch (authType) {
    case 'simple':
      return new SimpleKeyProvider(parseAuthConfig(SimpleConfigSchema, required(), 'simple').api_key);
    case 'database':
      if (!options.store) throw new Error('a session factory is required for database authentication');
      if (authConfig) parseAuthConfig(DatabaseConfigSchema, authConfig, 'database');
      return new DatabaseKeyProvider(options.store);
    case 'static':
      return new StaticKeyProvider(required());
    case 'local':
      return new LocalAuthProvider(required(), { clock: options.clock });
    case 'oidc':
      return new OidcAuthProvider(required(), { log: options.log, clock: options.clock });
    case 'multi-oidc':
      return new MultiOidcAuthProvider(required(), { log: options.log, clock: options.clock });
    default:
      throw new Error(`Unknown auth_type: ${authType}`);
  }
}
