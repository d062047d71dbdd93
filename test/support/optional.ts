// Tests that need an optional system component (faketime, PostgreSQL, etcd, ZooKeeper) skip on a machine
// without it, with one line naming the Debian package. In CI (env CI set: .ci/run installs them all) a
// missing component is a failure instead, so a green CI never hides a skipped suite.
import { findEtcd } from '../../src/testing/etcd-cluster.js';
import { findZooKeeper } from '../../src/testing/zookeeper-ensemble.js';

/** A `skip` option for node:test: false when `available`; locally the reason; in CI it throws. */
export function requireComponent(available: boolean, what: string, debianPackage: string): false | string {
  if (available) return false;
  const reason = `${what} is not available (Debian: apt-get install -y ${debianPackage}); skipped`;
  if (process.env.CI) throw new Error(`${reason.replace('; skipped', '')}: CI installs it (.ci/run), so this is a failure`);
  return reason;
}

/** Whether an etcd binary is found (on PATH or at $ETCD): the etcd suites need one. */
export function hasEtcd(): boolean {
  try {
    findEtcd();
    return true;
  } catch {
    return false;
  }
}

/** The `skip` option of a suite that needs etcd. */
export const requireEtcd = (what: string): false | string => requireComponent(hasEtcd(), what, 'etcd-server');

/** Whether ZooKeeper's jars and a Java runtime are found (Debian's layout, $ZOOKEEPER_HOME or $ZOOKEEPER_CLASSPATH). */
export function hasZooKeeper(): boolean {
  try {
    findZooKeeper();
    return true;
  } catch {
    return false;
  }
}

/** The `skip` option of a suite that needs ZooKeeper (its `zookeeper` package brings a Java runtime too). */
export const requireZooKeeper = (what: string): false | string => requireComponent(hasZooKeeper(), what, 'zookeeper');
