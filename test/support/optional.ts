// Tests that need an optional system component (faketime, PostgreSQL, etcd, ZooKeeper) skip on a machine
// without it, with one line naming the Debian package. In CI (env CI set: .ci/run installs them all) a
// missing component is a failure instead, so a green CI never hides a skipped suite.

/** A `skip` option for node:test: false when `available`; locally the reason; in CI it throws. */
export function requireComponent(available: boolean, what: string, debianPackage: string): false | string {
  if (available) return false;
  const reason = `${what} is not available (Debian: apt-get install -y ${debianPackage}); skipped`;
  if (process.env.CI) throw new Error(`${reason.replace('; skipped', '')}: CI installs it (.ci/run), so this is a failure`);
  return reason;
}
