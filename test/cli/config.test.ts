/**
 * @module test/cli/config
 * loadConfig's checks that span settings: the data directory may not lie inside the mount point
 * (the daemon's own mount would hide it from the daemon).
 */
import t from 'tap';
import { loadConfig } from '../../src/config.js';

t.test('a data directory inside the mount point is refused, naming both', async (t) => {
  for (const [dataDir, mount] of [['/srv/svc/data', '/srv/svc'], ['/srv/svc', '/srv/svc'], ['/srv/svc/a/../data', '/srv/svc']]) {
    t.throws(() => loadConfig({ dataDir, mount }, {}), /invalid configuration: mount: the data directory \/srv\/svc(\/data)? is inside the mount point \/srv\/svc/, `${dataDir} in ${mount}`);
  }
});

t.test('anything else is accepted', async (t) => {
  t.equal(loadConfig({ dataDir: '/srv/svc-data', mount: '/srv/svc' }, {}).mount, '/srv/svc', 'a sibling whose name starts the same');
  t.equal(loadConfig({ dataDir: '/srv/data', mount: '/srv/data/mnt' }, {}).mount, '/srv/data/mnt', 'the mount point inside the data directory');
  t.equal(loadConfig({ dataDir: '/srv/data' }, {}).mount, undefined, 'no mount');
});
