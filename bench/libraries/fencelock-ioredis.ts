// fencelock over ioredis clients.
import type { LibraryContext } from '../types.js';
import { createFencelock, settings } from './fencelock.js';

export { settings };
export const create = (ctx: LibraryContext) => createFencelock('ioredis', ctx);
