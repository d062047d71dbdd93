// redlock@5.0.0-beta.2 (the v5 API: see redlock-v5-api.ts).
import Redlock, { type Lock } from 'redlock-v5';
import type { LibraryContext, LockLibrary } from '../types.js';
import { createV5, v5Settings, type RedlockV5 } from './redlock-v5-api.js';

export const settings = {
  ...v5Settings,
  errorListener: "an 'error' listener is attached: beta.2 emits one per refused vote and would crash the process without it",
};

export function create(ctx: LibraryContext): LockLibrary<Lock> {
  return createV5<Lock>('redlock@5-beta', (clients, options) => new Redlock(clients, options) as unknown as RedlockV5<Lock>, ctx, true);
}
