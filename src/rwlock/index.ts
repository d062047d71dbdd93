export { ReadWriteLock } from './read-write-lock.js';
