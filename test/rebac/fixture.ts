/**
 * @module test/rebac/fixture
 * The daemon's services over a temp data directory (so the fs rename hook is wired as in
 * production), a method caller that validates params and encodes results like a transport, and
 * `reopen()` to close the store and open the same directory again (restart persistence).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { pino } from 'pino';
import { buildServices, type Services } from '../../src/daemon.js';
import { parseParams } from '../../src/core/method.js';
import { anonymousContext, type OperationContext } from '../../src/core/context.js';
import { encodeValue } from '../../src/core/wire.js';

export interface RebacFixture {
  /** The current services (replaced by reopen()). */
  readonly s: Services;
  /** Call a method as a transport does: validate params, run the handler, encode the result. */
  call(name: string, params: unknown, ctx?: OperationContext): Promise<unknown>;
  /** Close the store and open the same data directory again. */
  reopen(): Promise<void>;
}

/** `clock` (ms since the epoch) replaces Date.now for tuple expiry: tests move it instead of sleeping. */
export function open(t: Test, opts: { enforcePermissions?: boolean; clock?: () => number } = {}): RebacFixture {
  const dir = mkdtempSync(join(tmpdir(), 'svc-rebac-'));
  const log = pino({ level: 'silent' });
  let s = buildServices(dir, log, opts);
  const close = async () => {
    await s.mounts.close();
    await s.store.close();
  };
  t.teardown(async () => {
    await close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    get s() {
      return s;
    },
    async call(name, params, ctx = anonymousContext('test')) {
      const m = s.methods[name];
      if (!m) throw new Error(`no method ${name}`);
      return encodeValue(await m.handler(parseParams(m, params), ctx));
    },
    async reopen() {
      await close();
      s = buildServices(dir, log, opts);
    },
  };
}

/** An authenticated context. */
export function user(id: string, opts: { tenant?: string; admin?: boolean; type?: string } = {}): OperationContext {
  return Object.freeze({
    authenticated: true, subjectType: opts.type ?? 'user', subjectId: id, tenantId: opts.tenant ?? 'default',
    isAdmin: opts.admin ?? false, source: 'test',
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Real time plus an offset that `advance` moves (pass `now` as the fixture's clock). */
export function testClock(): { now: () => number; advance: (ms: number) => void } {
  let offset = 0;
  return { now: () => Date.now() + offset, advance: (ms) => { offset += ms; } };
}
