// @sesamecare-oss/redlock: the maintained TypeScript fork of redlock v5 (ioredis defineCommand scripts; see redlock-v5-api.ts).
import { Redlock, type Lock } from '@sesamecare-oss/redlock';
import type { LibraryContext, LockLibrary } from '../types.js';
import { createV5, v5Settings, type RedlockV5 } from './redlock-v5-api.js';

export const settings = v5Settings;

export function create(ctx: LibraryContext): LockLibrary<Lock> {
  return createV5<Lock>(
    '@sesamecare-oss/redlock',
    (clients, options) => new Redlock(clients, options) as unknown as RedlockV5<Lock>,
    ctx,
    false,
  );
}
