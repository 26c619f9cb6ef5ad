/**
 * @module config
 * Daemon configuration: flags > environment (SVC_*) > defaults, validated once with zod and
 * frozen. The only module that reads process.env.
 */
import { z } from 'zod';
import { homedir, platform } from 'node:os';
import { join } from 'node:path';

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
  maxBody: z.number().int().min(1024),
  logLevel: z.enum(LOG_LEVELS),
});

export type Config = Readonly<z.infer<typeof ConfigSchema>>;

/** What the CLI passes: flags as given (undefined when not set). */
export interface ConfigInput {
  host?: string | undefined;
  port?: number | undefined;
  dataDir?: string | undefined;
  apiKey?: string | undefined;
  maxBody?: string | number | undefined;
  logLevel?: string | undefined;
}

/** Resolve flags > env > defaults; throws a readable Error naming the bad setting. */
export function loadConfig(flags: ConfigInput = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const raw = {
    host: flags.host ?? env.SVC_HOST ?? '127.0.0.1',
    port: flags.port ?? (env.SVC_PORT !== undefined ? Number(env.SVC_PORT) : 2026),
    dataDir: flags.dataDir ?? env.SVC_DATA_DIR ?? defaultDataDir(env),
    apiKey: flags.apiKey ?? (env.SVC_SERVER_API_KEY || undefined),
    maxBody: parseSize(flags.maxBody ?? env.SVC_MAX_BODY ?? '64mb'),
    logLevel: flags.logLevel ?? env.SVC_LOG_LEVEL ?? 'info',
  };
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`invalid configuration: ${issue.path.join('.')}: ${issue.message}`);
  }
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
