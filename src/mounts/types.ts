/**
 * @module mounts/types
 * Mount backend types (spec §2.4), in a module of their own so the CLI can name them without
 * loading the mount service.
 */
export const BACKEND_TYPES = ['local', 'cas_bucket', 'bucket_connector', 'cloud_drive'] as const;
export type BackendType = (typeof BACKEND_TYPES)[number];
