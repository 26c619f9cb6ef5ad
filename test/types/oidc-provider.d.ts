// oidc-provider ships no type declarations; the tests use it only through idp.ts.
declare module 'oidc-provider';
