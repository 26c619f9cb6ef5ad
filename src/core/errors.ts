/**
 * @module core/errors
 * One error family for every face. Each wire code of spec §7 has one class; transports map
 * them with {@link toJsonRpc} (RPC, WebSocket) and {@link toErrno} (FUSE).
 */

/** JSON-RPC error codes, spec §7. */
export const ErrorCode = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  FILE_NOT_FOUND: -32000,
  FILE_EXISTS: -32001,
  INVALID_PATH: -32002,
  ACCESS_DENIED: -32003,
  PERMISSION_ERROR: -32004,
  VALIDATION_ERROR: -32005,
  CONFLICT: -32006,
} as const;
export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Base of every error that reaches a client. `data` is sent as `error.data`. */
export class SvcError extends Error {
  readonly code: ErrorCodeValue;
  readonly data: Record<string, unknown> | undefined;
  /** HTTP status used where the transport has one to choose (body limit, whoami). */
  readonly httpStatus: number;
  constructor(code: ErrorCodeValue, message: string, data?: Record<string, unknown>, httpStatus = 200) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.data = data;
    this.httpStatus = httpStatus;
  }
}

export class ParseError extends SvcError {
  constructor(message = 'Parse error: invalid JSON') { super(ErrorCode.PARSE_ERROR, message); }
}
export class InvalidRequestError extends SvcError {
  constructor(message: string, data?: Record<string, unknown>, httpStatus = 200) {
    super(ErrorCode.INVALID_REQUEST, message, data, httpStatus);
  }
}
export class MethodNotFoundError extends SvcError {
  constructor(method: string) { super(ErrorCode.METHOD_NOT_FOUND, `Method not found: ${method}`, { method }); }
}
export class InvalidParamsError extends SvcError {
  constructor(message: string, data?: Record<string, unknown>) { super(ErrorCode.INVALID_PARAMS, message, data); }
}
export class InternalError extends SvcError {
  constructor(errorId: string) { super(ErrorCode.INTERNAL_ERROR, 'Internal error', { error_id: errorId }); }
}
export class NotFoundError extends SvcError {
  constructor(message: string, data?: Record<string, unknown>) { super(ErrorCode.FILE_NOT_FOUND, message, data); }
}
export class ExistsError extends SvcError {
  constructor(message: string, data?: Record<string, unknown>) { super(ErrorCode.FILE_EXISTS, message, data); }
}
export class InvalidPathError extends SvcError {
  constructor(message: string, path?: string) {
    super(ErrorCode.INVALID_PATH, message, path === undefined ? undefined : { path });
  }
}
export class AccessDeniedError extends SvcError {
  constructor(message = 'Invalid or expired token') { super(ErrorCode.ACCESS_DENIED, message, undefined, 401); }
}
export class PermissionDeniedError extends SvcError {
  constructor(message: string, data?: Record<string, unknown>) { super(ErrorCode.PERMISSION_ERROR, message, data, 403); }
}
export class ValidationError extends SvcError {
  constructor(message: string, data?: Record<string, unknown>) { super(ErrorCode.VALIDATION_ERROR, message, data); }
}
export class ConflictError extends SvcError {
  constructor(message: string, data?: Record<string, unknown>) { super(ErrorCode.CONFLICT, message, data); }
}

/** JSON-RPC `error` member for an SvcError. */
export function toJsonRpc(err: SvcError): { code: number; message: string; data?: unknown } {
  return err.data === undefined
    ? { code: err.code, message: err.message }
    : { code: err.code, message: err.message, data: err.data };
}

/**
 * errno name for an SvcError, for the FUSE face. Validation errors carry an `errno` in their data
 * when the service knows the POSIX meaning (ENOTEMPTY, EISDIR, ENOTDIR); otherwise EINVAL.
 */
export function toErrno(err: SvcError): string {
  switch (err.code) {
    case ErrorCode.FILE_NOT_FOUND: return 'ENOENT';
    case ErrorCode.FILE_EXISTS: return 'EEXIST';
    case ErrorCode.INVALID_PATH: return typeof err.data?.errno === 'string' ? err.data.errno : 'EINVAL';
    case ErrorCode.ACCESS_DENIED: return 'EACCES';
    case ErrorCode.PERMISSION_ERROR: return typeof err.data?.errno === 'string' ? err.data.errno : 'EACCES';
    case ErrorCode.VALIDATION_ERROR: return typeof err.data?.errno === 'string' ? err.data.errno : 'EINVAL';
    case ErrorCode.CONFLICT: return 'EBUSY';
    case ErrorCode.INVALID_PARAMS: return 'EINVAL';
    default: return 'EIO';
  }
}
