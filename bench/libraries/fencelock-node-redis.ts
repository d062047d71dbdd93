// fencelock over node-redis (`redis` package) clients.
import type { LibraryContext } from '../types.js';
import { createFencelock, settings } from './fencelock.js';

export { settings };
export const create = (ctx: LibraryContext) => createFencelock('node-redis', ctx);
