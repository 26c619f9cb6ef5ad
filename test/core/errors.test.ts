import t from 'tap';
import * as errors from '../../src/core/errors.js';
import {
  ErrorCode, SvcError, toJsonRpc, toErrno,
  ParseError, InvalidRequestError, MethodNotFoundError, InvalidParamsError, InternalError, NotFoundError,
  ExistsError, InvalidPathError, AccessDeniedError, PermissionDeniedError, ValidationError, ConflictError,
} from '../../src/core/errors.js';

/** Spec §7, copied by hand: the source of truth the code must agree with. */
const SPEC_TABLE: readonly (readonly [number, string])[] = [
  [-32700, 'PARSE_ERROR'],
  [-32600, 'INVALID_REQUEST'],
  [-32601, 'METHOD_NOT_FOUND'],
  [-32602, 'INVALID_PARAMS'],
  [-32603, 'INTERNAL_ERROR'],
  [-32000, 'FILE_NOT_FOUND'],
  [-32001, 'FILE_EXISTS'],
  [-32002, 'INVALID_PATH'],
  [-32003, 'ACCESS_DENIED'],
  [-32004, 'PERMISSION_ERROR'],
  [-32005, 'VALIDATION_ERROR'],
  [-32006, 'CONFLICT'],
];

/** One row per wire class: how to build one, its spec name, and the errno FUSE reports by default. */
const CLASSES: readonly { cls: new (...a: never[]) => SvcError; name: string; make: () => SvcError; errno: string }[] = [
  { cls: ParseError, name: 'PARSE_ERROR', make: () => new ParseError(), errno: 'EIO' },
  { cls: InvalidRequestError, name: 'INVALID_REQUEST', make: () => new InvalidRequestError('bad envelope'), errno: 'EIO' },
  { cls: MethodNotFoundError, name: 'METHOD_NOT_FOUND', make: () => new MethodNotFoundError('nope'), errno: 'EIO' },
  { cls: InvalidParamsError, name: 'INVALID_PARAMS', make: () => new InvalidParamsError('bad', { param: 'x' }), errno: 'EINVAL' },
  { cls: InternalError, name: 'INTERNAL_ERROR', make: () => new InternalError('id-1'), errno: 'EIO' },
  { cls: NotFoundError, name: 'FILE_NOT_FOUND', make: () => new NotFoundError('File not found: /a', { path: '/a' }), errno: 'ENOENT' },
  { cls: ExistsError, name: 'FILE_EXISTS', make: () => new ExistsError('File already exists: /a', { path: '/a' }), errno: 'EEXIST' },
  { cls: InvalidPathError, name: 'INVALID_PATH', make: () => new InvalidPathError('bad path', '/a/../b'), errno: 'EINVAL' },
  { cls: AccessDeniedError, name: 'ACCESS_DENIED', make: () => new AccessDeniedError(), errno: 'EACCES' },
  { cls: PermissionDeniedError, name: 'PERMISSION_ERROR', make: () => new PermissionDeniedError('no'), errno: 'EACCES' },
  { cls: ValidationError, name: 'VALIDATION_ERROR', make: () => new ValidationError('invalid'), errno: 'EINVAL' },
  { cls: ConflictError, name: 'CONFLICT', make: () => new ConflictError('etag mismatch'), errno: 'EBUSY' },
];

t.test('ErrorCode is exactly the spec §7 table', async (t) => {
  t.same(Object.entries(ErrorCode).map(([n, c]) => [c, n]).sort(), [...SPEC_TABLE].map((r) => [...r]).sort());
});

t.test('one class per spec code, each mapping to its code', async (t) => {
  for (const row of CLASSES) {
    const err = row.make();
    const spec = SPEC_TABLE.find(([, n]) => n === row.name)!;
    t.ok(err instanceof row.cls, row.name);
    t.ok(err instanceof SvcError);
    t.ok(err instanceof Error);
    t.equal(err.code, spec[0], `${row.cls.name} → ${spec[0]}`);
    t.equal(err.name, row.cls.name, 'name is the class name (useful in logs)');
  }
  const codes = CLASSES.map((r) => r.make().code).sort();
  t.same(codes, SPEC_TABLE.map(([c]) => c).sort(), 'every spec code has exactly one class');
});

t.test('every exported error class is in the table above', async (t) => {
  const exported = Object.values(errors).filter(
    (v): v is typeof SvcError => typeof v === 'function' && v.prototype instanceof SvcError,
  );
  t.same(exported.map((c) => c.name).sort(), CLASSES.map((r) => r.cls.name).sort());
});

t.test('toJsonRpc gives {code, message, data?} and nothing else', async (t) => {
  for (const row of CLASSES) {
    const err = row.make();
    const out = toJsonRpc(err);
    const keys = err.data === undefined ? ['code', 'message'] : ['code', 'data', 'message'];
    t.same(Object.keys(out).sort(), keys, `${row.name} keys`);
    t.equal(out.code, err.code);
    t.equal(out.message, err.message);
    if (err.data !== undefined) t.same(out.data, err.data);
    t.same(JSON.parse(JSON.stringify(out)), out, `${row.name} is plain JSON`);
  }
});

t.test('messages and data of the fixed-text classes', async (t) => {
  t.same(toJsonRpc(new MethodNotFoundError('frobnicate')), {
    code: -32601, message: 'Method not found: frobnicate', data: { method: 'frobnicate' },
  });
  t.same(toJsonRpc(new InternalError('e-42')), { code: -32603, message: 'Internal error', data: { error_id: 'e-42' } });
  t.same(toJsonRpc(new InvalidPathError('bad', '/x')), { code: -32002, message: 'bad', data: { path: '/x' } });
  t.same(toJsonRpc(new InvalidPathError('bad')), { code: -32002, message: 'bad' });
  t.match(new ParseError().message, /invalid JSON/i);
  t.same(toJsonRpc(new ConflictError('c', { path: '/a', expected_etag: 'x', current_etag: 'y' })).data,
    { path: '/a', expected_etag: 'x', current_etag: 'y' });
});

t.test('HTTP status where a transport has one to choose', async (t) => {
  t.equal(new AccessDeniedError().httpStatus, 401);
  t.equal(new PermissionDeniedError('no').httpStatus, 403);
  t.equal(new InvalidRequestError('too big', undefined, 413).httpStatus, 413);
  t.equal(new NotFoundError('x').httpStatus, 200);
});

t.test('toErrno: the default errno of each class', async (t) => {
  for (const row of CLASSES) t.equal(toErrno(row.make()), row.errno, row.name);
});

t.test('toErrno: data.errno refines where the service knows the POSIX meaning', async (t) => {
  t.equal(toErrno(new ValidationError('Directory not empty: /d', { path: '/d', errno: 'ENOTEMPTY' })), 'ENOTEMPTY');
  t.equal(toErrno(new ValidationError('Is a directory: /d', { path: '/d', errno: 'EISDIR' })), 'EISDIR');
  t.equal(toErrno(new ValidationError('Not a directory: /f', { path: '/f', errno: 'ENOTDIR' })), 'ENOTDIR');
  t.equal(toErrno(new PermissionDeniedError('read-only mount', { errno: 'EROFS' })), 'EROFS');
  const long = new InvalidPathError('too long', '/x');
  (long.data as Record<string, unknown>).errno = 'ENAMETOOLONG';
  t.equal(toErrno(long), 'ENAMETOOLONG');
  // A non-string errno is ignored rather than passed on.
  t.equal(toErrno(new ValidationError('odd', { errno: 39 })), 'EINVAL');
  // errno on codes that have a fixed meaning does not change it.
  t.equal(toErrno(new NotFoundError('gone', { errno: 'EISDIR' })), 'ENOENT');
  t.equal(toErrno(new InternalError('id')), 'EIO');
});
