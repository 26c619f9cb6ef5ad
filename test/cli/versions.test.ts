import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDaemon, svc } from './harness.js';

const { url, client } = await startDaemon(t);
const run = (args: string[]) => svc(args, { url });
const put = (path: string, content: string | Uint8Array) => client.call('write', { path, content: Buffer.from(content) });
const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');

const local = await mkdtemp(join(tmpdir(), 'svc-cli-versions-'));
t.teardown(() => rm(local, { recursive: true, force: true }));

const binary = Buffer.concat([Buffer.from([0, 1, 2, 0xff]), randomBytes(50_000)]);
await put('/v/doc.txt', 'line one\nline two\n');
await put('/v/doc.txt', 'line one\nline 2\n');
await put('/v/blob.bin', binary);
await put('/v/blob.bin', 'text now');

t.test('versions list: a table newest first; --json the entries', async (t) => {
  const [human, json] = await Promise.all([run(['versions', 'list', '/v/doc.txt']), run(['versions', 'list', '/v/doc.txt', '--json'])]);
  t.equal(human.code, 0, human.stderr);
  const lines = human.out.trimEnd().split('\n');
  t.match(lines[0], /^VERSION\s+SIZE\s+MODIFIED\s+ETAG\s+SOURCE$/);
  t.match(lines[1], new RegExp(`^\\s*2\\s+16\\s+\\S+Z\\s+${sha256('line one\nline 2\n').slice(0, 12)}…\\s+write$`));
  t.match(lines[2], /^\s*1\s+18\s+/);
  t.equal(lines.length, 3);
  const entries = JSON.parse(json.out);
  t.same(entries.map((e: { version: number }) => e.version), [2, 1]);
  t.match(entries[1], { version: 1, size: 18, etag: sha256('line one\nline two\n') });
});

t.test('versions get writes the raw bytes to stdout or --out', async (t) => {
  const out = join(local, 'v1.bin');
  const [text, bytes, toFile, json] = await Promise.all([
    run(['versions', 'get', '/v/doc.txt', '1']),
    run(['versions', 'get', '/v/blob.bin', '1']),
    run(['versions', 'get', '/v/blob.bin', '1', '--out', out]),
    run(['versions', 'get', '/v/doc.txt', '2', '--json']),
  ]);
  t.equal(text.out, 'line one\nline two\n');
  t.ok(bytes.stdout.equals(binary), 'binary version is byte-identical on stdout');
  t.equal(toFile.code, 0, toFile.stderr);
  t.equal(toFile.out, `wrote version 1 of /v/blob.bin to ${out} (${binary.length} bytes)\n`);
  t.ok((await readFile(out)).equals(binary), 'binary version is byte-identical in --out');
  t.same(JSON.parse(json.out), { __type__: 'bytes', data: Buffer.from('line one\nline 2\n').toString('base64') });
});

t.test('versions diff: metadata by default, a unified diff with --mode content', async (t) => {
  const [meta, content, json] = await Promise.all([
    run(['versions', 'diff', '/v/doc.txt', '1', '2']),
    run(['versions', 'diff', '/v/doc.txt', '1', '2', '--mode', 'content']),
    run(['versions', 'diff', '/v/doc.txt', '1', '2', '--json']),
  ]);
  t.equal(meta.code, 0, meta.stderr);
  t.match(meta.out, /^path:\s+\/v\/doc\.txt$/m);
  t.match(meta.out, /^versions:\s+1 -> 2$/m);
  t.match(meta.out, /^size:\s+18 -> 16 bytes$/m);
  t.match(meta.out, /^content changed:\s+yes$/m);
  t.match(content.out, /^--- \/v\/doc\.txt \(v1\)$/m);
  t.match(content.out, /^\+\+\+ \/v\/doc\.txt \(v2\)$/m);
  t.match(content.out, /^-line two$/m);
  t.match(content.out, /^\+line 2$/m);
  t.ok(content.out.endsWith('\n'));
  t.same(JSON.parse(json.out), {
    path: '/v/doc.txt', v1: 1, v2: 2, etag_v1: sha256('line one\nline two\n'), etag_v2: sha256('line one\nline 2\n'),
    size_v1: 18, size_v2: 16, content_changed: true,
  });
});

t.test('versions rollback writes the old content as a new version', async (t) => {
  await put('/v/roll.txt', 'first');
  await put('/v/roll.txt', 'second');
  const r = await run(['versions', 'rollback', '/v/roll.txt', '1']);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.out, `rolled back /v/roll.txt to version 1 (now version 3, etag ${sha256('first').slice(0, 12)}…)\n`);
  t.equal((await client.call('read', { path: '/v/roll.txt' })).toString(), 'first');
  const json = await run(['versions', 'rollback', '/v/roll.txt', '2', '--json']);
  t.same(JSON.parse(json.out), { success: true, version: 4, etag: sha256('second') });
});

t.test('version errors: unknown version -32000, a non-number or bad mode is a usage error', async (t) => {
  const [unknown, missingFile, notNumber, zero, badMode, noSub] = await Promise.all([
    run(['versions', 'get', '/v/doc.txt', '9']),
    run(['versions', 'list', '/v/none.txt']),
    run(['versions', 'get', '/v/doc.txt', 'latest']),
    run(['versions', 'diff', '/v/doc.txt', '0', '1']),
    run(['versions', 'diff', '/v/doc.txt', '1', '2', '--mode', 'words']),
    run(['versions']),
  ]);
  t.equal(unknown.code, 1, unknown.stderr);
  t.equal(unknown.stderr, 'svc: error -32000: Version 9 not found for /v/doc.txt\n');
  t.equal(missingFile.code, 1, missingFile.stderr);
  t.equal(missingFile.stderr, 'svc: error -32000: File not found: /v/none.txt\n');
  t.equal(notNumber.code, 2, notNumber.stderr);
  t.equal(notNumber.stderr, 'svc: version must be a positive integer, got latest\n');
  t.equal(zero.code, 2, zero.stderr);
  t.equal(zero.stderr, 'svc: v1 must be a positive integer, got 0\n');
  t.equal(badMode.code, 2, badMode.stderr);
  t.match(badMode.stderr, /^svc: Invalid values:/);
  t.equal(noSub.code, 2, noSub.stderr);
  t.match(noSub.stderr, /^svc: Name a subcommand/);
});
