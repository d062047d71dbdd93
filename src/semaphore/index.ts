export { Semaphore, type SemaphoreOptions } from './semaphore.js';
