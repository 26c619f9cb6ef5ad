import t from 'tap';
import { makeFs, b, sha256, rejection } from './fixture.js';

t.test('one event per committed change, in order, with the fields a watcher needs', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  await fs.write('/p/a.txt', b('1'));
  await fs.write('/p/a.txt', b('2'));
  await fs.mkdir('/q');
  await fs.rename('/p/a.txt', '/q/b.txt');
  await fs.rollback('/q/b.txt', 1);
  await fs.delete('/q/b.txt');
  await fs.rmdir('/p');
  const events = fx.take();
  t.same(events.map(({ at, ...rest }) => rest), [
    { type: 'mkdir', path: '/p' },
    { type: 'write', path: '/p/a.txt', etag: sha256('1'), version: 1 },
    { type: 'write', path: '/p/a.txt', etag: sha256('2'), version: 2 },
    { type: 'mkdir', path: '/q' },
    { type: 'rename', path: '/p/a.txt', new_path: '/q/b.txt' },
    { type: 'write', path: '/q/b.txt', etag: sha256('1'), version: 3 },
    { type: 'delete', path: '/q/b.txt' },
    { type: 'rmdir', path: '/p' },
  ]);
  for (const e of events) t.match(e.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, `${e.type} at is ISO 8601 UTC`);
});

t.test('an event is published only after the change is visible', async (t) => {
  const fx = makeFs(t);
  const seen: boolean[] = [];
  fx.bus.subscribe((e) => {
    if (e.type === 'write') seen.push(fx.fs.exists(e.path));
    if (e.type === 'delete') seen.push(!fx.fs.exists(e.path));
  });
  await fx.fs.write('/v.txt', b('x'));
  await fx.fs.delete('/v.txt');
  t.same(seen, [true, true]);
});

t.test('refused operations publish nothing', async (t) => {
  const fx = makeFs(t);
  const { fs } = fx;
  await fs.write('/f.txt', b('x'));
  await fs.mkdir('/d/e', { parents: true });
  fx.take();
  await rejection(fs.write('/f.txt', b('y'), { ifNoneMatch: true }));
  await rejection(fs.write('/f.txt', b('y'), { ifMatch: 'stale' }));
  await rejection(fs.delete('/missing'));
  await rejection(fs.rename('/missing', '/x'));
  await rejection(fs.mkdir('/d'));
  await rejection(fs.rmdir('/d'));
  await rejection(fs.rollback('/f.txt', 5));
  t.same(fx.take(), []);
});

t.test('a listener that throws neither fails the change nor stops other listeners', async (t) => {
  const fx = makeFs(t);
  fx.bus.subscribe(() => {
    throw new Error('listener bug');
  });
  const res = await fx.fs.write('/l.txt', b('x'));
  t.equal(res.version, 1);
  t.equal(fx.fs.read('/l.txt').content.toString(), 'x');
  t.equal(fx.take().length, 1, 'the recording listener still got the event');
  t.match(fx.listenerErrors, [{ message: 'listener bug' }]);
});
