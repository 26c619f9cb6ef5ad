/**
 * @module views/worker
 * The conversion worker's program: one job at a time, `{id, ext, data}` in, `{id, text}` or
 * `{id, error, unsupported}` out. It runs the converters of views/convert, so that a document
 * that makes a parser spin or allocate without end costs this worker (terminated by the daemon
 * after a time limit, or stopped by its heap limit), never the daemon's main thread.
 */
import { parentPort } from 'node:worker_threads';
import { convertToMarkdown, UnsupportedFormatError } from './convert.js';

export interface ConvertJob { id: number; ext: string; data: Uint8Array; maxExpanded: number }
export type ConvertAnswer =
  | { id: number; text: string }
  | { id: number; error: string; unsupported: boolean };

parentPort?.on('message', (job: ConvertJob) => {
  convertToMarkdown(job.ext, job.data, job.maxExpanded).then(
    (text) => parentPort!.postMessage({ id: job.id, text } satisfies ConvertAnswer),
    (err: unknown) => parentPort!.postMessage({
      id: job.id, error: err instanceof Error ? err.message : String(err), unsupported: err instanceof UnsupportedFormatError,
    } satisfies ConvertAnswer),
  );
});
