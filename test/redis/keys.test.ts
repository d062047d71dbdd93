// Key layout, as pure functions: no Redis here. The hash tag and slot are
// computed the way Redis Cluster does it (https://redis.io/docs/reference/cluster-spec/#hash-tags),
// on the UTF-8 bytes a client sends, not on JavaScript strings.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { encodeResource, keysFor, markerKey, slotMarkerFor, slotTag } from '../../src/redis/keys.js';
import { resolveResources } from '../../src/options.js';
import { InvalidArgumentError } from '../../src/errors.js';

const PREFIX = 'fencelock:';

/** The bytes Redis hashes: the text between the first '{' and the next '}' if that is non-empty, else the whole key. */
function hashTagBytes(key: string): Buffer {
  const bytes = Buffer.from(key, 'utf8');
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) return bytes.subarray(open + 1, close);
  }
  return bytes;
}

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

const slotOf = (key: string): number => crc16(hashTagBytes(key)) % 16384;

/** Strings rich in the characters the encoding cares about, mixed with any Unicode. */
const tricky = fc.string({
  unit: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom('{', '}', '%', '7', 'B', 'D', '2', '5', ':', 'a') },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  ),
  minLength: 1,
  maxLength: 30,
});
const anyResource = fc.oneof(tricky, fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }));

describe('hash tag and slot helpers (self-check against the spec examples)', () => {
  test('crc16 slot matches the values Redis documents', () => {
    assert.equal(slotOf('foo'), 12182);
    assert.equal(slotOf('123456789'), 12739);
    // "{user1000}.following" and "{user1000}.followers" hash "user1000" only
    assert.equal(slotOf('{user1000}.following'), slotOf('user1000'));
    assert.equal(slotOf('{user1000}.followers'), slotOf('{user1000}.following'));
    // an empty tag "{}" does not count: the whole key is hashed
    assert.deepEqual(hashTagBytes('foo{}{bar}'), Buffer.from('foo{}{bar}'));
    assert.deepEqual(hashTagBytes('foo{{bar}}zap'), Buffer.from('{bar'));
    assert.deepEqual(hashTagBytes('foo{bar}{zap}'), Buffer.from('bar'));
  });
});

describe('keysFor', () => {
  test('lays out lock, fence, channel and wait queue under the prefix with the resource as hash tag', () => {
    const k = keysFor(PREFIX, 'orders:42');
    assert.deepEqual(k, {
      resource: 'orders:42',
      lock: 'fencelock:{orders:42}:lock',
      fence: 'fencelock:{orders:42}:fence',
      channel: 'fencelock:{orders:42}:released',
      queue: 'fencelock:{orders:42}:queue',
      leases: 'fencelock:{orders:42}:leases',
    });
    assert.equal(markerKey(PREFIX), 'fencelock:{node}:epoch');
    assert.equal(keysFor('app:', 'x').lock, 'app:{x}:lock');
  });

  test('one marker per Cluster hash slot: every slot has a tag, the same in every process', () => {
    const tags = new Set<string>();
    for (let slot = 0; slot < 16384; slot++) {
      const tag = slotTag(slot);
      assert.equal(slotOf(`x{${tag}}`), slot, `tag ${tag} lands in slot ${slot}`);
      tags.add(tag);
    }
    assert.equal(tags.size, 16384);
    assert.equal(slotTag(0), '1bz', 'the first base-36 number in slot 0: fixed, so all clients agree');
  });

  test("braces and '%' are escaped, so the tag is the whole resource and never moves", () => {
    assert.equal(keysFor(PREFIX, 'a{b}c').lock, 'fencelock:{a%7Bb%7Dc}:lock');
    assert.equal(keysFor(PREFIX, '}').lock, 'fencelock:{%7D}:lock');
    assert.equal(keysFor(PREFIX, '%7B').lock, 'fencelock:{%257B}:lock');
    assert.equal(hashTagBytes(keysFor(PREFIX, '{}').lock).toString(), '%7B%7D');
  });

  test('property: lock, fence and channel of one resource share one non-empty hash tag (hence one slot)', () => {
    fc.assert(
      fc.property(anyResource, (resource) => {
        const k = keysFor(PREFIX, resource);
        const tag = hashTagBytes(k.lock);
        assert.ok(tag.length > 0);
        // the tag is exactly the encoded resource: only the resource decides the slot
        assert.deepEqual(tag, Buffer.from(encodeResource(resource), 'utf8'));
        assert.deepEqual(hashTagBytes(k.fence), tag);
        assert.deepEqual(hashTagBytes(k.channel), tag);
        assert.equal(slotOf(k.fence), slotOf(k.lock));
        assert.equal(slotOf(k.channel), slotOf(k.lock));
      }),
      { numRuns: 500 },
    );
  });

  test('property: the same holds under any keyPrefix without braces', () => {
    const prefix = fc.string({ maxLength: 12 }).filter((p) => !p.includes('{') && !p.includes('}'));
    fc.assert(
      fc.property(prefix, anyResource, (p, resource) => {
        const k = keysFor(p, resource);
        assert.ok(k.lock.startsWith(p) && k.fence.startsWith(p) && k.channel.startsWith(p));
        assert.deepEqual(hashTagBytes(k.lock), Buffer.from(encodeResource(resource), 'utf8'));
        assert.equal(slotOf(k.fence), slotOf(k.lock));
        assert.equal(slotOf(k.channel), slotOf(k.lock));
      }),
      { numRuns: 300 },
    );
  });

  test('property: distinct resources never share any key (as JavaScript strings)', () => {
    fc.assert(
      fc.property(anyResource, anyResource, (a, b) => {
        fc.pre(a !== b);
        const ka = keysFor(PREFIX, a);
        const kb = keysFor(PREFIX, b);
        const all = new Set([ka.lock, ka.fence, ka.channel, ka.queue, kb.lock, kb.fence, kb.channel, kb.queue]);
        assert.equal(all.size, 8);
        assert.notEqual(encodeResource(a), encodeResource(b));
      }),
      { numRuns: 1000 },
    );
    // the classic traps of a naive escaping
    const traps = ['{', '%7B', '%257B', '}', '%7D', '%', '%25', 'a{b', 'a%7Bb', '{a}', 'a'];
    assert.equal(new Set(traps.map((r) => keysFor(PREFIX, r).lock)).size, traps.length);
  });

  test('property: distinct resources that pass validation never share a key as the bytes Redis stores', () => {
    // Redis keys are bytes: a client sends UTF-8, where every lone surrogate
    // becomes U+FFFD. Two resources that differ only there would lock one key.
    const unit = fc.constantFrom('a', '{', '\ud800', '\udbff', '\udc00', '\ufffd');
    // pairs of strings of equal length that differ in some positions, so near-collisions are common
    const pair = fc
      .array(fc.tuple(unit, unit), { minLength: 1, maxLength: 4 })
      .map((units) => [units.map(([x]) => x).join(''), units.map(([, y]) => y).join('')] as const);
    const accepted = (r: string): boolean => {
      try {
        resolveResources(r);
        return true;
      } catch (error) {
        assert.ok(error instanceof InvalidArgumentError);
        return false;
      }
    };
    fc.assert(
      fc.property(pair, ([a, b]) => {
        fc.pre(a !== b && accepted(a) && accepted(b));
        const bytesA = Buffer.from(keysFor(PREFIX, a).lock, 'utf8');
        const bytesB = Buffer.from(keysFor(PREFIX, b).lock, 'utf8');
        assert.ok(!bytesA.equals(bytesB), `${JSON.stringify(a)} and ${JSON.stringify(b)} map to the same Redis key ${bytesA.toString()}`);
      }),
      { numRuns: 1000 },
    );
  });

  test("property: the per-slot epoch marker used on Cluster nodes shares the resource's slot (no CROSSSLOT)", () => {
    // A script on a Redis Cluster may only touch keys of one slot: the marker the
    // scripts pass along with a resource's keys must hash like the resource.
    fc.assert(
      fc.property(anyResource, (resource) => {
        const k = keysFor(PREFIX, resource);
        const marker = slotMarkerFor(PREFIX, k.lock);
        assert.ok(marker.startsWith(PREFIX));
        assert.ok(marker.endsWith(':node'), 'no resource key ends in :node');
        assert.ok(![k.lock, k.fence, k.channel, k.queue, k.leases].includes(marker));
        assert.equal(slotOf(marker), slotOf(k.lock));
      }),
      { numRuns: 300 },
    );
    // the per-node marker of a standalone node is one key, apart from every resource's keys
    assert.equal(markerKey(PREFIX), 'fencelock:{node}:epoch');
    assert.notEqual(keysFor(PREFIX, 'node').lock, markerKey(PREFIX));
  });
});
