import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDaemon, svc } from './harness.js';

const { url, client } = await startDaemon(t);
const run = (args: string[], input?: string | Uint8Array) => svc(args, { url, input });
const put = (path: string, content: string | Uint8Array) => client.call('write', { path, content: Buffer.from(content) });
const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');

const local = await mkdtemp(join(tmpdir(), 'svc-cli-local-'));
t.teardown(() => rm(local, { recursive: true, force: true }));

t.test('write from stdin or --from reports size, version and a short etag', async (t) => {
  const file = join(local, 'upload.txt');
  await writeFile(file, 'from a file\n');
  const [stdin, empty, fromFile, json, missing] = await Promise.all([
    run(['write', 'w//a.txt/'], 'hello world\n'),
    run(['write', '/w/empty.txt']),
    run(['write', '/w/from.txt', '--from', file]),
    run(['write', '/w/json.txt', '--json'], 'x'),
    run(['write', '/w/x.txt', '--from', join(local, 'nope')]),
  ]);
  t.equal(stdin.code, 0, stdin.stderr);
  t.equal(stdin.out, `wrote /w/a.txt (12 bytes, version 1, etag ${sha256('hello world\n').slice(0, 12)}…)\n`, 'path shown normalised');
  t.equal(empty.code, 0, empty.stderr);
  t.match(empty.out, /^wrote \/w\/empty\.txt \(0 bytes, version 1, /);
  t.equal(fromFile.out, `wrote /w/from.txt (12 bytes, version 1, etag ${sha256('from a file\n').slice(0, 12)}…)\n`);
  const result = JSON.parse(json.out);
  t.same(Object.keys(result).sort(), ['etag', 'modified_at', 'size', 'version'], '--json is the raw write result');
  t.match(result, { etag: sha256('x'), size: 1, version: 1 });
  t.match(result.modified_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.equal(missing.code, 1, missing.stderr);
  t.match(missing.stderr, /^svc: cannot read .*nope: ENOENT[^\n]*\n$/);

  const again = await run(['write', '/w/a.txt'], 'x');
  t.equal(again.out, `wrote /w/a.txt (1 byte, version 2, etag ${sha256('x').slice(0, 12)}…)\n`, 'every write is a new version');
  t.equal((await client.call('read', { path: '/w/from.txt' })).toString(), 'from a file\n');
});

t.test('binary content survives write and cat byte for byte', async (t) => {
  const every = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const data = Buffer.concat([every, randomBytes(300_000), Buffer.from([0, 0xff, 0x0d, 0x0a, 0x1a])]);
  const file = join(local, 'blob.bin');
  await writeFile(file, data);
  const [viaStdin, viaFile] = await Promise.all([run(['write', '/bin/stdin.bin'], data), run(['write', '/bin/file.bin', '--from', file])]);
  t.equal(viaStdin.code, 0, viaStdin.stderr);
  t.equal(viaFile.code, 0, viaFile.stderr);
  const [a, b, meta] = await Promise.all([run(['cat', '/bin/stdin.bin']), run(['cat', '/bin/file.bin']), run(['cat', '/bin/stdin.bin', '--json'])]);
  t.ok(a.stdout.equals(data), 'stdin upload reads back identical');
  t.ok(b.stdout.equals(data), '--from upload reads back identical');
  const json = JSON.parse(meta.out);
  t.equal(json.encoding, 'base64');
  t.ok(Buffer.from(json.content, 'base64').equals(data), 'cat --json carries the content as base64');
  t.match(json.metadata, { size: data.length, etag: sha256(data), version: 1 });
});

t.test('write preconditions: --if-none-match, --if-match, --force', async (t) => {
  const { etag } = await put('/c/cond.txt', 'one');
  const [exists, stale, created] = await Promise.all([
    run(['write', '/c/cond.txt', '--if-none-match'], 'two'),
    run(['write', '/c/cond.txt', '--if-match', 'deadbeef'], 'two'),
    run(['write', '/c/new.txt', '--if-none-match'], 'new'),
  ]);
  t.equal(exists.code, 1, exists.stderr);
  t.equal(exists.stderr, 'svc: error -32001: File already exists: /c/cond.txt\n');
  t.equal(stale.code, 1, stale.stderr);
  t.equal(stale.stderr, 'svc: error -32006: Conflict: etag mismatch for /c/cond.txt\n');
  t.equal(created.code, 0, '--if-none-match creates a missing file');
  const fresh = await run(['write', '/c/cond.txt', '--if-match', etag], 'two');
  t.equal(fresh.code, 0, fresh.stderr);
  t.match(fresh.out, /version 2/);
  const forced = await run(['write', '/c/cond.txt', '--if-match', 'deadbeef', '--force'], 'three');
  t.equal(forced.code, 0, forced.stderr);
  t.match(forced.out, /version 3/);
});

t.test('ls is non-recursive by default, -r lists everything, -l is a table', async (t) => {
  await put('/tree/top.txt', 'top');
  await put('/tree/sub/deep.txt', 'deep!');
  await client.call('mkdir', { path: '/tree/empty' });
  const [plain, rec, long, json, longJson, file, root, missing] = await Promise.all([
    run(['ls', '/tree']),
    run(['ls', '/tree', '-r']),
    run(['ls', '/tree', '-l', '-r']),
    run(['ls', '/tree', '--json']),
    run(['ls', '/tree', '-l', '--json']),
    run(['ls', '/tree/top.txt']),
    run(['ls']),
    run(['ls', '/no/such/dir']),
  ]);
  t.equal(plain.code, 0, plain.stderr);
  t.equal(plain.out, '/tree/empty/\n/tree/sub/\n/tree/top.txt\n');
  t.equal(rec.out, '/tree/empty/\n/tree/sub/\n/tree/sub/deep.txt\n/tree/top.txt\n');
  const lines = long.out.trimEnd().split('\n');
  t.equal(lines.length, 5, 'a header and one row per entry');
  t.match(lines[0], /^TYPE\s+SIZE\s+VERSION\s+MODIFIED\s+PATH$/);
  t.match(lines[1], /^dir\s+-\s+-\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+\/tree\/empty\/$/);
  t.match(lines[3], /^file\s+5\s+1\s+\S+Z\s+\/tree\/sub\/deep\.txt$/);
  t.same(JSON.parse(json.out), ['/tree/empty/', '/tree/sub/', '/tree/top.txt']);
  const entries = JSON.parse(longJson.out);
  t.same(entries.map((e: { path: string }) => e.path), ['/tree/empty/', '/tree/sub/', '/tree/top.txt']);
  t.match(entries[2], { is_directory: false, size: 3, version: 1, etag: sha256('top') });
  t.equal(file.out, '/tree/top.txt\n', 'ls of a file names the file, like a shell');
  t.match(root.out, /^\/tree\/$/m);
  t.notMatch(root.out, /top\.txt/, 'the root listing is not recursive either');
  t.equal(missing.code, 1, missing.stderr);
  t.equal(missing.stderr, 'svc: error -32000: Directory not found: /no/such/dir\n');
});

t.test('ls shows the markdown views of documents; --no-parsed hides them', async (t) => {
  await put('/papers/a.rtf', '{\\rtf1 Hello}');
  await put('/papers/b.txt', 'b');
  const [shown, hidden] = await Promise.all([run(['ls', '/papers']), run(['ls', '/papers', '--no-parsed'])]);
  t.equal(shown.out, '/papers/a.rtf\n/papers/a_parsed.rtf.md\n/papers/b.txt\n');
  t.equal(hidden.out, '/papers/a.rtf\n/papers/b.txt\n');
  t.equal((await run(['cat', '/papers/a_parsed.rtf.md'])).out, 'Hello\n');
});

t.test('stat prints key: value lines; --json the metadata record', async (t) => {
  await put('/s/file.md', '# title\n');
  const [file, dir, json, missing] = await Promise.all([
    run(['stat', '/s/file.md']), run(['stat', '/s']), run(['stat', '/s/file.md', '--json']), run(['stat', '/s/nope']),
  ]);
  t.equal(file.code, 0, file.stderr);
  t.match(file.out, /^path:\s+\/s\/file\.md$/m);
  t.match(file.out, /^type:\s+file$/m);
  t.match(file.out, /^size:\s+8 bytes$/m);
  t.match(file.out, /^version:\s+1$/m);
  t.match(file.out, new RegExp(`^etag:\\s+${sha256('# title\n')}$`, 'm'));
  t.match(file.out, /^content type:\s+text\/markdown$/m);
  t.match(file.out, /^modified:\s+\d{4}-/m);
  t.match(dir.out, /^type:\s+directory$/m);
  t.notMatch(dir.out, /^etag:/m);
  t.match(JSON.parse(json.out), { path: '/s/file.md', size: 8, version: 1, is_directory: false });
  t.equal(missing.code, 1, missing.stderr);
  t.equal(missing.stderr, 'svc: error -32000: File not found: /s/nope\n');
  t.equal(missing.out, '');
});
