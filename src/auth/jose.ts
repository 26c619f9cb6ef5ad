/**
 * @module auth/jose
 * jose, loaded on first use: only the local and OIDC modes need it, and importing it costs the
 * daemon's start-up about 40 ms that every other mode would pay for nothing.
 */
let loading: Promise<typeof import('jose')> | undefined;

export function jose(): Promise<typeof import('jose')> {
  loading ??= import('jose');
  return loading;
}
