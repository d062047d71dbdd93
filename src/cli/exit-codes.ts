// The CLI's exit codes: stable, the same for every command, listed in `fencelock --help` and the README.
// Where a convention exists it is followed: sysexits.h (64-78) for lock outcomes, the shell's for commands.

export const EXIT = {
  /** done; for `run`: the command's own code is passed through instead */
  OK: 0,
  /** a failed operation or a broken invariant (demo), an error not listed below */
  FAILURE: 1,
  /** bad usage: unknown option, bad value, missing --nodes; nothing was started, no network call made */
  USAGE: 2,
  /** the lock nodes cannot make a quorum (unreachable, erroring, or quarantined past the deadline): EX_UNAVAILABLE */
  UNAVAILABLE: 69,
  /** `run`: the lock was not acquired within --timeout (held by another owner): EX_TEMPFAIL, try again later */
  NOT_ACQUIRED: 75,
  /** `run`: the lock was lost while the command ran; the command was sent SIGTERM (then SIGKILL) */
  LOCK_LOST: 76,
  /** `run`: the command could not be started (not executable) */
  CANNOT_RUN: 126,
  /** `run`: the command was not found */
  NOT_FOUND: 127,
} as const;

/** The table for `fencelock --help`. */
export const EXIT_CODES_HELP = `
Exit codes (every command):
  0    done (run: the command's own exit code; 128+N when signal N ended it)
  1    an operation failed, or the demo found a broken invariant
  2    bad usage (nothing started, no network call made)
  69   the lock nodes cannot make a quorum (unreachable, erroring, quarantined)
  75   run: not acquired within --timeout (held by another owner; --no-wait: at once)
  76   run: the lock was lost while the command ran (it got SIGTERM, then SIGKILL after --grace)
  126  run: the command could not be started
  127  run: the command was not found

Environment (the defaults of the flags named):
  FENCELOCK_NODES   --nodes: comma-separated redis:// URLs of the lock nodes
  FENCELOCK_ETCD    --etcd: etcd://host:port,… of an etcd cluster, instead of --nodes
  FENCELOCK_ZK      --zk: zk://host:port,… of a ZooKeeper ensemble, instead of --nodes
  FENCELOCK_PREFIX  --prefix: the key prefix (else fencelock:)`;
