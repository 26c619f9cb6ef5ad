/**
 * @module config
 * Daemon configuration: flags > environment (SVC_*) > defaults, validated once with zod and
 * frozen. The only module that reads process.env.
 */
import { z } from 'zod';
import { homedir, platform } from 'node:os';
import { join, resolve } from 'node:path';
import { isWithin } from './core/paths.js';
import { AUTH_TYPES } from './auth/types.js';
import { readAuthConfigFile } from './auth/config-file.js';

/** Where data lives when neither --data-dir nor SVC_DATA_DIR says: the platform's data directory. */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (platform() === 'darwin') return join(homedir(), 'Library', 'Application Support', 'svc');
  if (platform() === 'win32') return join(env.APPDATA ?? join(homedir(), 'AppData', 'Roaming'), 'svc');
  return join(env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), 'svc');
}

const SIZE = /^(\d+(?:\.\d+)?)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib)?$/i;
const UNITS: Record<string, number> = { b: 1, k: 1024, kb: 1024, kib: 1024, m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1024 ** 3, gib: 1024 ** 3 };

/** Parse `64mb`, `1048576`, `512KiB` into bytes. */
export function parseSize(value: string | number): number {
  if (typeof value === 'number') return value;
  const m = SIZE.exec(value.trim());
  if (!m) throw new Error(`not a size: ${value}`);
  return Math.floor(Number(m[1]) * UNITS[(m[2] ?? 'b').toLowerCase()]!);
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const ConfigSchema = z.strictObject({
  host: z.string().min(1),
  port: z.number().int().min(0).max(65535),
  dataDir: z.string().min(1),
  apiKey: z.string().min(1).optional(),
  /** Server auth mode (spec §5.2); undefined = no authentication. `--api-key` alone means `simple`. */
  authType: z.enum(AUTH_TYPES).optional(),
  /** The mode's settings (`--auth-config FILE`, JSON or YAML), checked by the auth factory. */
  authConfig: z.record(z.string(), z.unknown()).optional(),
  /** Whether permissions are checked; defaults to true when auth is configured. */
  enforcePermissions: z.boolean(),
  maxBody: z.number().int().min(1024),
  logLevel: z.enum(LOG_LEVELS),
  /** Absolute directory where the daemon mounts its own file tree with FUSE; none when undefined. */
  mount: z.string().min(1).optional(),
});

export type Config = Readonly<z.infer<typeof ConfigSchema>>;

/** What the CLI passes: flags as given (undefined when not set). */
export interface ConfigInput {
  host?: string | undefined;
  port?: number | undefined;
  dataDir?: string | undefined;
  apiKey?: string | undefined;
  authType?: string | undefined;
  /** A file path (JSON or YAML), or the settings themselves (programmatic use, tests). */
  authConfig?: string | Record<string, unknown> | undefined;
  enforcePermissions?: boolean | undefined;
  maxBody?: string | number | undefined;
  logLevel?: string | undefined;
  mount?: string | undefined;
}

const BOOLEAN = /^(true|1|yes|on|false|0|no|off)$/i;

/** A boolean environment variable; undefined when unset or empty. */
function envBoolean(name: string, env: NodeJS.ProcessEnv): boolean | undefined {
  const v = env[name];
  if (v === undefined || v === '') return undefined;
  if (!BOOLEAN.test(v)) throw new Error(`invalid configuration: ${name}: expected true or false, got ${v}`);
  return /^(true|1|yes|on)$/i.test(v);
}

/**
 * `SVC_DATABASE_URL` names the metadata store: unset or `lmdb:` is the embedded LMDB store in the
 * data directory. PostgreSQL arrives with the scale-out issue; until then it is refused plainly.
 */
function checkDatabaseUrl(url: string | undefined): void {
  if (url === undefined || url === '' || /^lmdb:(\/\/\/?)?$/i.test(url)) return;
  if (/^postgres(ql)?:/i.test(url)) {
    throw new Error('invalid configuration: SVC_DATABASE_URL: PostgreSQL (postgres://) arrives with the scale-out issue; '
      + 'until then svc keeps keys and metadata in its embedded store: leave SVC_DATABASE_URL unset or set it to lmdb:');
  }
  if (/^lmdb:/i.test(url)) {
    throw new Error('invalid configuration: SVC_DATABASE_URL: the embedded store lives in the data directory (--data-dir); write lmdb: alone');
  }
  throw new Error(`invalid configuration: SVC_DATABASE_URL: unsupported scheme ${url.split(':')[0]}: (supported: lmdb:)`);
}

/** Resolve the auth mode: `--api-key` alone means simple; conflicting settings are refused. */
function resolveAuth(flags: ConfigInput, env: NodeJS.ProcessEnv) {
  const apiKey = flags.apiKey ?? (env.SVC_SERVER_API_KEY || undefined);
  let authType = flags.authType ?? (env.SVC_AUTH_TYPE || undefined);
  if (authType === undefined && apiKey !== undefined) authType = 'simple';
  if (authType === 'simple' && apiKey === undefined) {
    throw new Error('invalid configuration: --auth-type simple needs the key: --api-key KEY (or SVC_SERVER_API_KEY)');
  }
  if (authType !== undefined && authType !== 'simple' && apiKey !== undefined) {
    throw new Error(`invalid configuration: --api-key (or SVC_SERVER_API_KEY) is the simple mode; it cannot be combined with --auth-type ${authType}`);
  }
  const source = flags.authConfig ?? (env.SVC_AUTH_CONFIG || undefined);
  const authConfig = typeof source === 'string' ? readAuthConfigFile(source) : source;
  if (authConfig !== undefined && authType === undefined) {
    throw new Error('invalid configuration: --auth-config needs --auth-type (simple, database, static, local, oidc or multi-oidc)');
  }
  checkDatabaseUrl(env.SVC_DATABASE_URL);
  return { apiKey, authType, authConfig: authConfig === undefined ? undefined : structuredClone(authConfig) };
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** Resolve flags > env > defaults; throws a readable Error naming the bad setting. */
export function loadConfig(flags: ConfigInput = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const auth = resolveAuth(flags, env);
  const raw = {
    host: flags.host ?? env.SVC_HOST ?? '127.0.0.1',
    port: flags.port ?? (env.SVC_PORT !== undefined ? Number(env.SVC_PORT) : 2026),
    dataDir: flags.dataDir ?? env.SVC_DATA_DIR ?? defaultDataDir(env),
    apiKey: auth.apiKey,
    authType: auth.authType,
    authConfig: auth.authConfig,
    enforcePermissions: flags.enforcePermissions ?? envBoolean('SVC_ENFORCE_PERMISSIONS', env) ?? auth.authType !== undefined,
    maxBody: parseSize(flags.maxBody ?? env.SVC_MAX_BODY ?? '64mb'),
    logLevel: flags.logLevel ?? env.SVC_LOG_LEVEL ?? 'info',
    mount: flags.mount || env.SVC_MOUNT ? resolve(flags.mount || env.SVC_MOUNT!) : undefined,
  };
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`invalid configuration: ${issue.path.join('.')}: ${issue.message}`);
  }
  const { mount, dataDir } = parsed.data;
  if (mount !== undefined) {
    const data = resolve(dataDir);
    if (isWithin(data, mount)) {
      throw new Error(`invalid configuration: mount: the data directory ${data} is inside the mount point ${mount}; the mount would hide it from the daemon itself: mount somewhere else`);
    }
  }
  if (parsed.data.authConfig) deepFreeze(parsed.data.authConfig);
  return Object.freeze(parsed.data);
}

/** Client-side settings for CLI commands that talk to a daemon. */
export function clientSettings(flags: { url?: string | undefined; apiKey?: string | undefined }, env: NodeJS.ProcessEnv = process.env) {
  return Object.freeze({
    url: flags.url ?? env.SVC_URL ?? 'http://127.0.0.1:2026',
    apiKey: flags.apiKey ?? env.SVC_API_KEY ?? undefined,
    subject: env.SVC_SUBJECT ?? undefined,
  });
}
