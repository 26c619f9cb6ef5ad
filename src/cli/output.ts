/**
 * @module cli/output
 * What every client command shares: the `--url` / `--api-key` / `--json` options, building the
 * typed client, writing to stdout binary-safely, small text formatters, and turning failures
 * into one stderr line and an exit code (1 RPC error, 2 usage, 3 daemon unreachable).
 */
import type { Argv } from 'yargs';
import { clientSettings } from '../config.js';
import { RpcError, SvcClient } from '../client/index.js';
import { encodeValue } from '../core/wire.js';
import { normalizePath } from '../core/paths.js';

/** Exit codes of the client commands. */
export const Exit = { OK: 0, ERROR: 1, USAGE: 2, UNREACHABLE: 3 } as const;

/** An expected failure detected by the CLI itself: printed as `svc: <message>`, no stack. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode: number = Exit.ERROR) {
    super(message);
    this.name = 'CliError';
  }
}

/** The options every command that talks to a daemon accepts. */
export function clientOptions<T>(y: Argv<T>) {
  return y
    .option('url', { type: 'string', describe: 'Daemon address', defaultDescription: '$SVC_URL, else http://127.0.0.1:2026' })
    .option('api-key', { type: 'string', describe: 'Bearer key for the daemon', defaultDescription: '$SVC_API_KEY' })
    .option('json', { type: 'boolean', default: false, describe: 'Print the raw result as JSON (for scripts)' });
}

/** Parsed client options as yargs hands them to a handler. */
export interface ClientArgs {
  url?: string | undefined;
  apiKey?: string | undefined;
  json?: boolean | undefined;
}

/** What a command body gets: the client, the resolved address, and whether to print JSON. */
export interface CommandContext {
  client: SvcClient;
  url: string;
  json: boolean;
}

/**
 * Run a command body against the daemon. Every failure ends here: one line on stderr and
 * `process.exitCode` set (never `process.exit`, so pending stdout is flushed first).
 */
export async function run(args: ClientArgs, body: (ctx: CommandContext) => Promise<void>): Promise<void> {
  let url = '';
  exitQuietlyOnClosedStdout();
  try {
    const settings = clientSettings({ url: args.url, apiKey: args.apiKey });
    url = settings.url;
    checkUrl(url);
    const client = new SvcClient({ url, apiKey: settings.apiKey, subject: settings.subject });
    await body({ client, url, json: args.json ?? false });
  } catch (err) {
    const { message, exitCode } = describeFailure(err, url);
    process.stderr.write(`svc: ${message}\n`);
    process.exitCode = exitCode;
  }
}

function checkUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError(`invalid daemon URL: ${url} (expected e.g. http://127.0.0.1:2026)`, Exit.USAGE);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new CliError(`invalid daemon URL: ${url} (the scheme must be http or https)`, Exit.USAGE);
  }
}

/** The stderr line (without `svc: `) and exit code for a failure. */
export function describeFailure(err: unknown, url: string): { message: string; exitCode: number } {
  if (err instanceof CliError) return { message: oneLine(err.message), exitCode: err.exitCode };
  if (err instanceof RpcError) {
    // An internal error is logged by the daemon under this id; show it so the log entry can be found.
    const errorId = (err.data as { error_id?: unknown } | undefined)?.error_id;
    const suffix = typeof errorId === 'string' ? ` (error_id ${errorId})` : '';
    return { message: `error ${err.code}: ${oneLine(err.message)}${suffix}`, exitCode: Exit.ERROR };
  }
  const reason = connectFailure(err);
  if (reason !== undefined) {
    return { message: `cannot reach svc at ${url}: ${oneLine(reason)}; is \`svc serve\` running?`, exitCode: Exit.UNREACHABLE };
  }
  if (err instanceof SyntaxError) {
    return { message: `${url} did not answer like an svc daemon: ${oneLine(err.message)}`, exitCode: Exit.ERROR };
  }
  const e = err as { message?: unknown };
  return { message: oneLine(typeof e?.message === 'string' ? e.message : String(err)), exitCode: Exit.ERROR };
}

/**
 * Why a request never got an answer, or undefined for any other failure. Global fetch (undici)
 * rejects with `TypeError: fetch failed` whose cause is the system error (ECONNREFUSED, ENOTFOUND…),
 * sometimes wrapped in an AggregateError when several addresses were tried.
 */
function connectFailure(err: unknown): string | undefined {
  if (!(err instanceof TypeError) || err.message !== 'fetch failed') return undefined;
  let cause = (err as { cause?: unknown }).cause as (Error & { code?: string; errors?: Error[] }) | undefined;
  if (cause?.errors?.length) cause = cause.errors[0] as typeof cause;
  return cause?.message || cause?.code || err.message;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

/** Write to stdout and wait until the data is handed to the OS (binary-safe). */
export function writeOut(data: string | Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(data, (err) => (err ? reject(err) : resolve()));
  });
}

/** Print lines to stdout, each ending with a newline; nothing for an empty list. */
export function printLines(lines: readonly string[]): Promise<void> {
  return lines.length ? writeOut(lines.join('\n') + '\n') : Promise.resolve();
}

/** Print a result as JSON: bytes in their wire form, datetimes as ISO strings. */
export function printJson(value: unknown): Promise<void> {
  return writeOut(JSON.stringify(encodeValue(value), null, 2) + '\n');
}

/** A reader that went away (`svc cat big | head`) is not an error: stop quietly. */
function exitQuietlyOnClosedStdout(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(Exit.OK);
    process.stderr.write(`svc: cannot write to stdout: ${err.message}\n`);
    process.exit(Exit.ERROR);
  });
}

/** The normalised form of a path for messages; the input itself when it does not normalise. */
export function displayPath(path: string): string {
  try {
    return normalizePath(path);
  } catch {
    return path;
  }
}

/** An ISO datetime without milliseconds: `2026-05-01T10:00:00Z`. */
export function shortTime(iso: string): string {
  return iso.replace(/\.\d+Z$/, 'Z');
}

/** The first characters of an etag, for human output. */
export function shortEtag(etag: string): string {
  return etag.length > 12 ? `${etag.slice(0, 12)}…` : etag;
}

/**
 * Align rows into columns separated by two spaces. `right` lists the columns that are
 * right-aligned (numbers); the last column is never padded.
 */
export function table(header: readonly string[], rows: readonly (readonly string[])[], right: readonly number[] = []): string[] {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const last = header.length - 1;
  return all.map((r) => r.map((cell, i) => {
    if (i === last) return cell;
    return right.includes(i) ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!);
  }).join('  '));
}

/** `key: value` lines with the values aligned. */
export function keyValues(pairs: readonly (readonly [string, string])[]): string[] {
  const width = Math.max(...pairs.map(([k]) => k.length)) + 1;
  return pairs.map(([k, v]) => `${(k + ':').padEnd(width)} ${v}`);
}

/**
 * A positive integer given on the command line (a version number, a limit); a usage error (exit 2)
 * otherwise. Positionals are declared as strings so that the message can show what was typed.
 */
export function positiveInt(name: string, value: unknown): number {
  const text = String(value);
  if (!/^[1-9]\d*$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new CliError(`${name} must be a positive integer, got ${text}`, Exit.USAGE);
  }
  return Number(text);
}
