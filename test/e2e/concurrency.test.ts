// Racing writers over HTTP: conditional writes are decided one at a time (spec §4.3 if_match /
// if_none_match; WIRE.md -32006 / -32001).
import t from 'tap';
import { createHash } from 'node:crypto';
import { startDaemon, bytes, unbytes, type Envelope } from '../helpers/daemon.js';

const N = 20;
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

t.test('concurrency', async (t) => {
  const d = await startDaemon({}, t);

  t.test(`${N} writers with the same if_match: exactly one wins, the others get -32006`, async (t) => {
    const base = await d.call('write', { path: '/race/file.txt', content: bytes('base') });
    const answers: Envelope[] = await Promise.all(Array.from({ length: N }, (_, i) =>
      d.rpc('write', { path: '/race/file.txt', content: bytes(`writer ${i}`), if_match: base.etag })));
    const winners = answers.filter((a) => a.result);
    const losers = answers.filter((a) => a.error);
    t.equal(winners.length, 1, 'one winner');
    t.equal(losers.length, N - 1);
    const win = winners[0]!.result;
    t.equal(win.version, 2);
    for (const l of losers) {
      t.equal(l.error!.code, -32006);
      t.same(l.error!.data, { path: '/race/file.txt', expected_etag: base.etag, current_etag: win.etag });
    }
    const content = unbytes(await d.call('read', { path: '/race/file.txt' })).toString();
    t.equal(sha(content), win.etag, 'the stored content is the winner\'s');
    t.equal((await d.call('list_versions', { path: '/race/file.txt' })).length, 2, 'losers left no versions');
  });

  t.test(`${N} creators with if_none_match: exactly one creates, the others get -32001`, async (t) => {
    const answers: Envelope[] = await Promise.all(Array.from({ length: N }, (_, i) =>
      d.rpc('write', { path: '/race/new/created.txt', content: bytes(`creator ${i}`), if_none_match: true })));
    t.equal(answers.filter((a) => a.result).length, 1);
    t.equal(answers.filter((a) => a.error?.code === -32001).length, N - 1);
    t.equal((await d.call('list_versions', { path: '/race/new/created.txt' })).length, 1);
  });

  t.test(`${N} unconditional writers: each gets its own version, none lost`, async (t) => {
    const answers = await Promise.all(Array.from({ length: N }, (_, i) =>
      d.call('write', { path: '/race/free.txt', content: bytes(`free ${i}`) })));
    const versions = answers.map((a) => a.version).sort((a, b) => a - b);
    t.same(versions, Array.from({ length: N }, (_, i) => i + 1));
    const list = await d.call('list_versions', { path: '/race/free.txt' });
    t.equal(list.length, N);
    for (const a of answers) t.equal(list.find((v: { version: number }) => v.version === a.version)?.etag, a.etag, `v${a.version}`);
  });

  t.test(`${N} writers into the same new directory tree all succeed`, async (t) => {
    const answers: Envelope[] = await Promise.all(Array.from({ length: N }, (_, i) =>
      d.rpc('write', { path: `/race/tree/a/b/f${String(i).padStart(2, '0')}.txt`, content: bytes(`${i}`) })));
    t.same(answers.filter((a) => a.error), []);
    t.equal((await d.call('list', { path: '/race/tree/a/b' })).length, N);
  });

  t.test(`${N} racing mkdirs: one succeeds, the others get -32001`, async (t) => {
    const answers: Envelope[] = await Promise.all(Array.from({ length: N }, () => d.rpc('mkdir', { path: '/race/dir' })));
    t.equal(answers.filter((a) => a.result).length, 1);
    t.equal(answers.filter((a) => a.error?.code === -32001).length, N - 1);
  });

  t.test(`${N} racing renames of one file: one succeeds, the others get -32000`, async (t) => {
    await d.call('write', { path: '/race/mv.txt', content: bytes('mv') });
    const answers: Envelope[] = await Promise.all(Array.from({ length: N }, (_, i) =>
      d.rpc('rename', { old_path: '/race/mv.txt', new_path: `/race/mv-${i}.txt` })));
    t.equal(answers.filter((a) => a.result).length, 1);
    t.equal(answers.filter((a) => a.error?.code === -32000).length, N - 1);
    t.equal((await d.call('glob', { pattern: 'mv*', path: '/race' })).length, 1);
  });
});
