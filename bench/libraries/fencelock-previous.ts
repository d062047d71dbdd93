// The previous release of fencelock over ioredis (see bench/previous.ts), for the side-by-side figures.
import { previousEntry } from '../previous.js';
import type { LibraryContext } from '../types.js';
import { createFencelock, settings } from './fencelock.js';

export { settings };
export const create = (ctx: LibraryContext) =>
  createFencelock(
    'ioredis',
    ctx,
    () => import(previousEntry()) as Promise<typeof import('../../src/index.js')>,
    'fencelock/ioredis@previous',
  );
