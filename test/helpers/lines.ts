/**
 * @module test/helpers/lines
 * The complete lines a child process writes to a stream, as they arrive.
 */
import type { Readable } from 'node:stream';

/** Collect `stream`'s lines into the array returned; `onLines` is called after each chunk adds some. */
export function collectLines(stream: Readable, onLines?: () => void): string[] {
  const lines: string[] = [];
  let partial = '';
  stream.on('data', (d: Buffer) => {
    partial += d.toString();
    const parts = partial.split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
    onLines?.();
  });
  return lines;
}
