/**
 * @module core/events
 * The in-process change bus. The fs service publishes one event per committed change, whatever
 * face made it; WebSocket `watch`, FUSE cache invalidation and MCP subscribe here.
 */

export type ChangeType = 'write' | 'delete' | 'rename' | 'mkdir' | 'rmdir';

export interface ChangeEvent {
  readonly type: ChangeType;
  readonly path: string;
  /** Destination of a rename. */
  readonly new_path?: string;
  readonly etag?: string;
  readonly version?: number;
  /** ISO 8601 time of the commit. */
  readonly at: string;
}

export type ChangeListener = (event: ChangeEvent) => void;

/** A synchronous fan-out; a listener that throws is reported and does not stop the others. */
export class EventBus {
  readonly #listeners = new Set<ChangeListener>();
  readonly #onListenerError: (err: unknown) => void;

  constructor(onListenerError: (err: unknown) => void = () => {}) {
    this.#onListenerError = onListenerError;
  }

  /** Subscribe; returns the function that unsubscribes. */
  subscribe(listener: ChangeListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  publish(event: ChangeEvent): void {
    for (const l of this.#listeners) {
      try {
        l(event);
      } catch (err) {
        this.#onListenerError(err);
      }
    }
  }

  get listenerCount(): number {
    return this.#listeners.size;
  }
}
