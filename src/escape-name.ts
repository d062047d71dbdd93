/**
 * A name as part of a key or a znode name: '%', '/' and ':' escaped (`%25`, `%2F`, `%3A`), so that no
 * name's keys fall inside another's range and a name cannot reach into another namespace (`semaphore:`).
 */
export function escapeName(name: string): string {
  return name.replace(/[%/:]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
