/**
 * @module test/fuse/fuse-native
 * The ordinary-tools scenarios (test/fuse/tools.test.ts) again on fuse-native (libfuse 2), the
 * binding mounts use where svc's libfuse 3 addon is not built: the daemons the harness starts
 * inherit SVC_FUSE_BINDING. test/fuse/binding.test.ts checks that the variable picks the binding.
 */
process.env.SVC_FUSE_BINDING = 'fuse-native';
await import('./tools.test.js');
