/**
 * Key layout. Everything fencelock stores for one resource lives under one
 * Redis Cluster hash tag, `{<resource>}`, so the lock key, its fence counter
 * and its release channel land in one slot and one script can touch them all.
 *
 *   <prefix>{<resource>}:lock      owner token, with the lease as its TTL
 *   <prefix>{<resource>}:fence     fencing counter (never expires)
 *   <prefix>{<resource>}:released  pub/sub channel a release publishes on
 *   <prefix>{<resource>}:queue     waiters in arrival order (sorted set, score = ticket)
 *   <prefix>{<resource>}:leases    the same waiters' lease ends (sorted set, score = ms)
 *   <prefix>{node}:epoch           this node's data epoch (restart detection)
 *   <prefix>{<resource>}:epoch     the same, per slot, on a Redis Cluster node
 *                                  (a script may only touch keys of one slot there)
 *
 * Braces inside a resource name would move the hash tag (Redis hashes the
 * text between the first `{` and the next `}`), so `{`, `}` and `%` are
 * percent-encoded. The encoding is one-to-one: distinct resources never share keys.
 */
export interface ResourceKeys {
  readonly resource: string;
  readonly lock: string;
  readonly fence: string;
  readonly channel: string;
  /** waiting owners in arrival order, and when each one's place lapses (see algorithm/wait.ts) */
  readonly queue: string;
  readonly leases: string;
  /** the epoch marker used on a Cluster node, where the per-node marker would cross slots */
  readonly slotMarker: string;
}

export function encodeResource(resource: string): string {
  return resource.replace(/[%{}]/g, (c) => (c === '%' ? '%25' : c === '{' ? '%7B' : '%7D'));
}

export function keysFor(prefix: string, resource: string): ResourceKeys {
  const base = `${prefix}{${encodeResource(resource)}}`;
  return {
    resource,
    lock: `${base}:lock`,
    fence: `${base}:fence`,
    channel: `${base}:released`,
    queue: `${base}:queue`,
    leases: `${base}:leases`,
    slotMarker: `${base}:epoch`,
  };
}

/** The per-node marker whose epoch changes when a node loses its data. Hash-tagged `{node}`. */
export function markerKey(prefix: string): string {
  return `${prefix}{node}:epoch`;
}

/** Redis Cluster has 16384 hash slots. */
const SLOTS = 16384;

/**
 * The Cluster hash slot of a key: CRC16 (XMODEM) of its hash tag (the text between the first `{` and
 * the next `}`, when not empty), or of the whole key, modulo 16384. As `CLUSTER KEYSLOT` computes it.
 */
export function clusterKeySlot(key: string | Buffer): number {
  let bytes = typeof key === 'string' ? Buffer.from(key, 'utf8') : key;
  const open = bytes.indexOf(0x7b); // '{'
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1); // '}'
    if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  }
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % SLOTS;
}
