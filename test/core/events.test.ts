import t from 'tap';
import { EventBus, type ChangeEvent } from '../../src/core/events.js';

const ev = (path: string): ChangeEvent => ({ type: 'write', path, at: new Date(0).toISOString() });

t.test('every subscriber gets every event, in order, until it unsubscribes', async (t) => {
  const bus = new EventBus();
  const a: string[] = [];
  const b: string[] = [];
  const offA = bus.subscribe((e) => a.push(e.path));
  bus.subscribe((e) => b.push(e.path));
  t.equal(bus.listenerCount, 2);
  bus.publish(ev('/1'));
  bus.publish(ev('/2'));
  offA();
  t.equal(bus.listenerCount, 1);
  bus.publish(ev('/3'));
  t.same(a, ['/1', '/2']);
  t.same(b, ['/1', '/2', '/3']);
});

t.test('a throwing listener is reported and does not stop the others', async (t) => {
  const reported: unknown[] = [];
  const bus = new EventBus((err) => reported.push(err));
  const seen: string[] = [];
  bus.subscribe(() => {
    throw new Error('listener bug');
  });
  bus.subscribe((e) => seen.push(e.path));
  t.doesNotThrow(() => bus.publish(ev('/x')));
  t.same(seen, ['/x']);
  t.equal(reported.length, 1);
  t.match(reported[0], { message: 'listener bug' });
});

t.test('publishing with no listeners is a no-op', async (t) => {
  t.doesNotThrow(() => new EventBus().publish(ev('/y')));
});
