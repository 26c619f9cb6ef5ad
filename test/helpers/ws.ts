/**
 * @module test/helpers/ws
 * A small JSON-RPC client over WebSocket for e2e tests: send raw frames, await the answer to an
 * id, and await pushed notifications (`fs.event`) with a timeout.
 */
import WebSocket from 'ws';

export interface WsClient {
  readonly socket: WebSocket;
  /** Send any JSON value (or a raw string) as one frame. */
  send(message: unknown): void;
  /** Send a request and await the answer with its id. */
  request(method: string, params?: Record<string, unknown>, id?: number | string): Promise<any>;
  /** The next received message that satisfies `pred` (checks already-received ones first). */
  next(pred?: (msg: any) => boolean, timeoutMs?: number): Promise<any>;
  /** Every message received so far that satisfies `pred`, without waiting. */
  received(pred?: (msg: any) => boolean): any[];
  /** Wait `ms`, then return the messages that arrived meanwhile and satisfy `pred`. */
  quietFor(ms: number, pred?: (msg: any) => boolean): Promise<any[]>;
  close(): Promise<void>;
}

/** Connect to `<httpUrl>/api/nfs/ws`; rejects with the HTTP status when the upgrade is refused. */
export function connectWs(httpUrl: string, headers: Record<string, string> = {}): Promise<WsClient> {
  const socket = new WebSocket(httpUrl.replace(/^http/, 'ws') + '/api/nfs/ws', { headers });
  const inbox: any[] = [];
  const consumed = new Set<any>();
  const waiters = new Set<() => void>();
  let nextId = 1;
  socket.on('message', (data) => {
    inbox.push(JSON.parse(data.toString()));
    for (const w of [...waiters]) w();
  });
  const client: WsClient = {
    socket,
    send(message) {
      socket.send(typeof message === 'string' ? message : JSON.stringify(message));
    },
    request(method, params = {}, id = `r${nextId++}`) {
      client.send({ jsonrpc: '2.0', id, method, params });
      return client.next((m) => !Array.isArray(m) && m.id === id);
    },
    next(pred = () => true, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = inbox.find((m) => !consumed.has(m) && pred(m));
          if (hit === undefined) return false;
          consumed.add(hit);
          waiters.delete(check);
          clearTimeout(timer);
          resolve(hit);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching WebSocket message within ${timeoutMs} ms; got ${JSON.stringify(inbox).slice(0, 500)}`));
        }, timeoutMs);
        if (!check()) waiters.add(check);
      });
    },
    received(pred = () => true) {
      return inbox.filter(pred);
    },
    async quietFor(ms, pred = () => true) {
      const before = inbox.length;
      await new Promise((r) => setTimeout(r, ms));
      return inbox.slice(before).filter(pred);
    },
    close() {
      if (socket.readyState === WebSocket.CLOSED) return Promise.resolve();
      return new Promise((resolve) => {
        socket.once('close', () => resolve());
        socket.close();
      });
    },
  };
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(client));
    socket.once('unexpected-response', (_req, res) => {
      reject(Object.assign(new Error(`upgrade refused: HTTP ${res.statusCode}`), { statusCode: res.statusCode }));
      res.resume();
    });
    socket.once('error', reject);
  });
}
