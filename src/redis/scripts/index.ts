import { Script } from '../adapters/types.js';
import {
  acquireLua,
  batchLua,
  dequeueLua,
  extendLua,
  extendManyLua,
  forceReleaseLua,
  inspectLua,
  raiseFenceLua,
  releaseLua,
} from './lua.generated.js';
import { leaseExtendLua, leaseReleaseLua, rwlockAcquireLua, semaphoreAcquireLua } from './lua.generated.js';
import { migrateLua, readNodeLua, repairLua } from './lua.generated.js';

/** The Lua side of the protocol; each file in this folder says what its KEYS and ARGV are. */
export const scripts = {
  acquire: new Script('acquire', acquireLua),
  release: new Script('release', releaseLua),
  batch: new Script('batch', batchLua),
  dequeue: new Script('dequeue', dequeueLua),
  extend: new Script('extend', extendLua),
  extendMany: new Script('extend-many', extendManyLua),
  raiseFence: new Script('raise-fence', raiseFenceLua),
  inspect: new Script('inspect', inspectLua),
  forceRelease: new Script('force-release', forceReleaseLua),
  semaphoreAcquire: new Script('semaphore-acquire', semaphoreAcquireLua),
  rwlockAcquire: new Script('rwlock-acquire', rwlockAcquireLua),
  leaseExtend: new Script('lease-extend', leaseExtendLua),
  leaseRelease: new Script('lease-release', leaseReleaseLua),
  readNode: new Script('read-node', readNodeLua),
  repair: new Script('repair', repairLua),
  migrate: new Script('migrate', migrateLua),
} as const;
