import { Script } from '../adapters/types.js';
import { acquireLua, dequeueLua, extendLua, forceReleaseLua, inspectLua, raiseFenceLua, releaseLua } from './lua.generated.js';

/** The Lua side of the protocol; each file in this folder says what its KEYS and ARGV are. */
export const scripts = {
  acquire: new Script('acquire', acquireLua),
  release: new Script('release', releaseLua),
  dequeue: new Script('dequeue', dequeueLua),
  extend: new Script('extend', extendLua),
  raiseFence: new Script('raise-fence', raiseFenceLua),
  inspect: new Script('inspect', inspectLua),
  forceRelease: new Script('force-release', forceReleaseLua),
} as const;
