/**
 * @module auth/config-file
 * The `--auth-config FILE` of `svc serve` (JSON, or YAML for `.yaml`/`.yml`): reading it,
 * validating one mode's section with a readable message, and adding a local user to it
 * (`svc admin create-user`), which keeps a YAML file's comments and layout.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname } from 'node:path';
import type * as Yaml from 'yaml';

/** yaml, loaded on first use (only YAML config files need it; start-up of every other daemon skips it). */
const yaml = (): typeof Yaml => createRequire(import.meta.url)('yaml') as typeof Yaml;
import type { z } from 'zod';

const isYaml = (path: string) => ['.yaml', '.yml'].includes(extname(path).toLowerCase());

/** Read an auth config file; throws an Error naming the file when it is unreadable or not an object. */
export function readAuthConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read auth config ${path}: ${(err as Error).message}`);
  }
  let value: unknown;
  try {
    value = isYaml(path) ? yaml().parse(text) : JSON.parse(text);
  } catch (err) {
    throw new Error(`auth config ${path} is not valid ${isYaml(path) ? 'YAML' : 'JSON'}: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error(`auth config ${path} must contain an object (a mapping of settings)`);
  }
  return value as Record<string, unknown>;
}

/** Validate a mode's auth config; the Error names the first bad setting. */
export function parseAuthConfig<S extends z.ZodType>(schema: S, config: unknown, mode: string): z.output<S> {
  const parsed = schema.safeParse(config);
  if (parsed.success) return parsed.data;
  let issue = parsed.error.issues[0]!;
  // A bad record key (zod's invalid_key) carries the real complaint one level down.
  if (issue.code === 'invalid_key' && issue.issues[0]) issue = { ...issue.issues[0], path: issue.path } as typeof issue;
  const where = issue.path.length ? `${issue.path.map(String).join('.')}: ` : '';
  throw new Error(`invalid auth_config for ${mode} authentication: ${where}${issue.message}`);
}

/**
 * Add (or replace) a user in a local-mode config file. A missing file is created with a fresh
 * random `jwt_secret` and mode 0600. Returns whether the user existed before.
 */
export function writeLocalUser(path: string, username: string, user: Record<string, unknown>): { replaced: boolean; created: boolean } {
  const created = !existsSync(path);
  const mode = created ? 0o600 : statSync(path).mode & 0o777;
  let text: string;
  let replaced = false;
  if (isYaml(path)) {
    const doc = created ? yaml().parseDocument('{}') : yaml().parseDocument(readFileSync(path, 'utf8'));
    if (doc.errors.length) throw new Error(`auth config ${path} is not valid YAML: ${doc.errors[0]!.message}`);
    if (created) doc.set('jwt_secret', randomBytes(32).toString('hex'));
    replaced = doc.hasIn(['users', username]);
    doc.setIn(['users', username], doc.createNode(user));
    text = doc.toString();
  } else {
    const config = created ? { jwt_secret: randomBytes(32).toString('hex') } : readAuthConfigFile(path);
    const users = (config.users ?? {}) as Record<string, unknown>;
    if (typeof users !== 'object' || Array.isArray(users)) throw new Error(`auth config ${path}: users must be a mapping`);
    replaced = Object.hasOwn(users, username);
    config.users = { ...users, [username]: user };
    text = JSON.stringify(config, null, 2) + '\n';
  }
  // Atomic: a half-written config would lock everyone out at the next start.
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode });
  renameSync(tmp, path);
  return { replaced, created };
}
