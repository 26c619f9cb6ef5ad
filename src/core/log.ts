/**
 * @module core/log
 * Structured logs (pino): one root logger per daemon, a child per component.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'svc' } }, pino.destination({ fd: 2, sync: false }));
}
