/**
 * Key layout. Everything fencelock stores for one resource lives under one
 * Redis Cluster hash tag, `{<resource>}`, so the lock key, its queue and its
 * release channel land in one slot and one script can touch them all. The fence
 * counter is not per resource: it is one per node (per slot on a Cluster node), in
 * the node's marker below, whose key ends in `:epoch` but holds trust, ttl and fence too.
 *
 *   <prefix>{<resource>}:lock      owner token, with the lease as its TTL
 *   <prefix>{<resource>}:released  pub/sub channel a release publishes on
 *   <prefix>{<resource>}:queue     waiters in arrival order (sorted set, score = ticket; expires)
 *   <prefix>{<resource>}:leases    the same waiters' lease ends (sorted set, score = ms; expires)
 *   <prefix>{<resource>}:watch     '1' while a waiter outside the queue (fair: false) waits: a release
 *                                  publishes '*' only then (expires after that waiter's queue lease)
 *   <prefix>{node}:epoch           this node's marker: its data epoch (restart detection), trust,
 *                                  longest ttl, and the fence counter of every resource (see _node-state.lua)
 *   <prefix>{<tag>}:node           the same, per hash slot, on a Redis Cluster node (a script may only
 *                                  touch keys of one slot there); `<tag>` is the slot's tag (slotTag)
 *
 * So once a resource's holds are released or expired and its queue has lapsed, nothing of it is left:
 * what fencelock keeps for good is one marker per node, or per slot (16,384 at most) on a Cluster node.
 * fencelock 0.1 also kept `<prefix>{<resource>}:fence` (a counter per resource) and, on Cluster nodes,
 * `<prefix>{<resource>}:epoch`; an acquire folds the first into the node's counter and deletes it.
 *
 * Braces inside a resource name would move the hash tag (Redis hashes the
 * text between the first `{` and the next `}`), so `{`, `}` and `%` are
 * percent-encoded. The encoding is one-to-one: distinct resources never share keys.
 */
export interface ResourceKeys {
  readonly resource: string;
  readonly lock: string;
  /** fencelock 0.1's per-resource fence counter, folded into the node's counter when met */
  readonly fence: string;
  readonly channel: string;
  /** waiting owners in arrival order, and when each one's place lapses (see wait.ts) */
  readonly queue: string;
  readonly leases: string;
}

const SPECIAL = /[%{}]/;

export function encodeResource(resource: string): string {
  if (!SPECIAL.test(resource)) return resource; // the usual name: nothing to encode, no new string
  return resource.replace(/[%{}]/g, (c) => (c === '%' ? '%25' : c === '{' ? '%7B' : '%7D'));
}

/** Every key of `resource` is this plus a suffix: its hash tag keeps them in one slot. */
function baseKey(prefix: string, resource: string): string {
  return `${prefix}{${encodeResource(resource)}}`;
}

export function keysFor(prefix: string, resource: string): ResourceKeys {
  const base = baseKey(prefix, resource);
  return {
    resource,
    lock: `${base}:lock`,
    fence: `${base}:fence`,
    channel: `${base}:released`,
    queue: `${base}:queue`,
    leases: `${base}:leases`,
  };
}

/** The lock key of `resource` alone (keysFor's `lock`), for a release, which needs no other key. */
export function lockKey(prefix: string, resource: string): string {
  return `${baseKey(prefix, resource)}:lock`;
}

/** The marker of one hash slot on a Cluster node: `<prefix>{<tag>}:node`, in that slot. */
export function slotMarkerKey(prefix: string, slot: number): string {
  return `${prefix}{${slotTag(slot)}}:node`;
}

/** The marker a script about `key` uses on a Cluster node: that of the key's slot. */
export function slotMarkerFor(prefix: string, key: string): string {
  return slotMarkerKey(prefix, clusterKeySlot(key));
}

let tags: string[] | undefined;

/**
 * A hash tag that lands in `slot`: the first of 0, 1, 2, … (in base 36) whose slot it is. Every process
 * computes the same table, so all clients agree on each slot's marker. Built on first use (a Cluster
 * node), about 160,000 CRC16s of 1 to 4 bytes.
 */
export function slotTag(slot: number): string {
  if (!tags) {
    const table: string[] = new Array<string>(SLOTS);
    let missing = SLOTS;
    for (let k = 0; missing > 0; k++) {
      const tag = k.toString(36);
      const s = clusterKeySlot(tag);
      if (table[s] === undefined) {
        table[s] = tag;
        missing--;
      }
    }
    tags = table;
  }
  return tags[slot] as string;
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
