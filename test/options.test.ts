// Input validation: every invalid argument the contract lists throws
// InvalidArgumentError before anything reaches Redis. "Nothing reached Redis"
// is checked on the server itself: INFO commandstats (every command the node
// ran, minus our own INFO) and total_connections_received do not move.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { InvalidArgumentError, LockError, LockManager, type Lock, type LockManagerOptions } from '../src/index.js';
import { keysFor } from '../src/redis/keys.js';
import { startRedisNode, type LocalRedisNode } from '../src/testing/index.js';

type NodeRedisClient = ReturnType<typeof createClient>;

const MAX_TTL = 2 ** 31 - 1;
const BASE: LockManagerOptions = { ttl: 2_000, nodeTimeout: 100 };

let node: LocalRedisNode;
let admin: Redis;
let ioClient: Redis;
let nrClient: NodeRedisClient;
const managers: LockManager[] = [];

before(async () => {
  node = await startRedisNode();
  admin = new Redis(node.url, { maxRetriesPerRequest: 1 });
  admin.on('error', () => undefined);
  ioClient = new Redis(node.url, { maxRetriesPerRequest: 1 });
  ioClient.on('error', () => undefined);
  nrClient = createClient({ url: node.url });
  nrClient.on('error', () => undefined);
  await Promise.all([admin.ping(), ioClient.ping(), nrClient.connect()]);
});

after(async () => {
  for (const m of managers) await m.close();
  ioClient?.disconnect();
  if (nrClient?.isOpen) nrClient.destroy();
  admin?.disconnect();
  await node?.stop();
});

/** Everything the server did except our own INFO calls, and how many connections it ever accepted. */
async function serverActivity(): Promise<{ commands: Record<string, string>; connections: string }> {
  const info = await admin.info('commandstats');
  const stats = await admin.info('stats');
  const commands: Record<string, string> = {};
  for (const line of info.split(/\r?\n/)) {
    const m = /^cmdstat_([^:]+):(.*)$/.exec(line);
    if (m && m[1] !== 'info') commands[m[1]!] = m[2]!.replace(/usec[^,]*,?/g, ''); // usec fields vary with machine noise; calls do not
  }
  const connections = /total_connections_received:(\d+)/.exec(stats)?.[1] ?? '?';
  return { commands, connections };
}

/** Runs `fn` and asserts the server saw no command and no new connection meanwhile. */
async function withoutTraffic(fn: () => Promise<void> | void): Promise<void> {
  const before = await serverActivity();
  await fn();
  const after = await serverActivity();
  assert.deepEqual(after, before, 'a command or connection reached Redis');
}

/** Asserts `fn` throws (or its promise rejects, within 2 s) an InvalidArgumentError. */
async function expectInvalid(label: string, fn: () => unknown): Promise<void> {
  let outcome: unknown;
  try {
    const result = fn();
    if (result instanceof Promise) {
      let timer: NodeJS.Timeout | undefined;
      const hang = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${label}: neither resolved nor rejected within 2 s`)), 2_000);
      });
      try {
        const value = await Promise.race([result, hang]);
        // Accepted by mistake: clean up whatever it took, then fail.
        if (value && typeof value === 'object' && 'release' in value) await (value as Lock).release();
        if (value instanceof LockManager) await value.close();
        outcome = value;
      } finally {
        clearTimeout(timer);
      }
    } else {
      if (result instanceof LockManager) await result.close();
      outcome = result;
    }
  } catch (error) {
    assert.ok(error instanceof InvalidArgumentError, `${label}: expected InvalidArgumentError, got ${String(error)}`);
    assert.ok(error instanceof LockError && error instanceof Error);
    assert.equal(error.code, 'INVALID_ARGUMENT');
    assert.equal(error.name, 'InvalidArgumentError');
    assert.ok(error.message.length > 0);
    return;
  }
  assert.fail(`${label}: accepted (${String(outcome)}) instead of throwing InvalidArgumentError`);
}

function manager(clients: unknown[], options: LockManagerOptions = BASE): LockManager {
  const m = new LockManager(clients as object[], options);
  managers.push(m);
  return m;
}

const INVALID_RESOURCES: Array<[string, unknown]> = [
  ['empty string', ''],
  ['number', 42],
  ['NaN', NaN],
  ['null', null],
  ['undefined', undefined],
  ['object', { name: 'a' }],
  ['String object', new String('a')],
  ['symbol', Symbol('a')],
  ['function', () => 'a'],
  ['bigint', 1n],
  ['empty array', []],
  ['duplicates', ['a', 'b', 'a']],
  ['array with empty string', ['a', '']],
  ['array with a number', ['a', 7]],
  ['array with null', ['a', null]],
  ['nested array', [['a']]],
];

describe('construction: invalid clients and options throw before connecting', () => {
  const ttlCases: Array<[string, LockManagerOptions]> = [
    ['ttl 0', { ttl: 0 }],
    ['ttl -1', { ttl: -1 }],
    ['ttl 1.5', { ttl: 1.5 }],
    ['ttl 1000.0001', { ttl: 1000.0001 }],
    ['ttl NaN', { ttl: NaN }],
    ['ttl Infinity', { ttl: Infinity }],
    ['ttl 2^31', { ttl: 2 ** 31 }],
    ['ttl string', { ttl: '30000' as unknown as number }],
    ['ttl null', { ttl: null as unknown as number }],
    ['ttl not larger than drift (3 <= 3*0.4+2)', { ttl: 3, driftFactor: 0.4, nodeTimeout: 1 }],
    ['ttl 2 (drift 2)', { ttl: 2, nodeTimeout: 1 }],
    ['driftFactor -0.01', { driftFactor: -0.01 }],
    ['driftFactor 0.5', { driftFactor: 0.5 }],
    ['driftFactor 1', { driftFactor: 1 }],
    ['driftFactor NaN', { driftFactor: NaN }],
    ['driftFactor Infinity', { driftFactor: Infinity }],
    ['driftFactor string', { driftFactor: '0.01' as unknown as number }],
    ['nodeTimeout == ttl/3', { ttl: 3_000, nodeTimeout: 1_000 }],
    ['nodeTimeout > ttl/3', { ttl: 1_000, nodeTimeout: 334 }],
    ['default nodeTimeout 200 vs ttl 600', { ttl: 600 }],
    ['nodeTimeout NaN', { nodeTimeout: NaN }],
    ['nodeTimeout negative', { nodeTimeout: -5 }],
    ['acquireTimeout -1', { acquireTimeout: -1 }],
    ['acquireTimeout NaN', { acquireTimeout: NaN }],
    ['acquireTimeout -Infinity', { acquireTimeout: -Infinity }],
    ['acquireTimeout string', { acquireTimeout: '10' as unknown as number }],
    ['restartQuarantine true', { restartQuarantine: true as unknown as false }],
    ["restartQuarantine 'always'", { restartQuarantine: 'always' as unknown as false }],
    ["restartQuarantine 'OBSERVED'", { restartQuarantine: 'OBSERVED' as unknown as false }],
    ['restartQuarantine -1', { restartQuarantine: -1 }],
    ['restartQuarantine 1.5', { restartQuarantine: 1.5 }],
    ['restartQuarantine NaN', { restartQuarantine: NaN }],
    ['restartQuarantine Infinity', { restartQuarantine: Infinity }],
    ['restartQuarantine null', { restartQuarantine: null as unknown as false }],
    ["restartQuarantine '1000'", { restartQuarantine: '1000' as unknown as false }],
    ['options a string', 'fast' as unknown as LockManagerOptions],
    ['options null', null as unknown as LockManagerOptions],
    ['options an array', [] as unknown as LockManagerOptions],
  ];

  test('each invalid option, with ioredis, node-redis and URL clients', async () => {
    await withoutTraffic(async () => {
      for (const [label, options] of ttlCases) {
        for (const clients of [[ioClient], [nrClient], [node.url]]) {
          await expectInvalid(label, () => new LockManager(clients, options));
        }
      }
    });
  });

  test('invalid client lists', async () => {
    const url = node.url;
    const otherIo = new Redis(url, { lazyConnect: true }); // same address as ioClient
    const cases: Array<[string, unknown]> = [
      ['empty list', []],
      ['no list', undefined],
      ['null', null],
      ['a bare URL string instead of a list', url],
      ['a bare client instead of a list', ioClient],
      ['plain object', [{}]],
      ['number', [6379]],
      ['null entry', [null]],
      ['looks a bit like ioredis', [{ status: 'ready', call: () => undefined }]],
      ['looks a bit like node-redis', [{ sendCommand: () => undefined }]],
      ['function', [() => ioClient]],
      ['http URL', ['http://127.0.0.1:6379']],
      ['mysql URL', ['mysql://127.0.0.1:3306']],
      ['not a URL', ['127.0.0.1:6379']],
      ['empty string', ['']],
      ['same ioredis client twice', [ioClient, ioClient]],
      ['same node-redis client twice', [nrClient, nrClient]],
      ['same URL twice', [url, url]],
      ['same address twice, once with /0', [url, `${url}/0`]],
      ['an ioredis client and a URL of the same server', [ioClient, url]],
      ['two ioredis clients of the same server', [ioClient, otherIo]],
      ['a good client, then garbage', [ioClient, { host: '127.0.0.1' }]],
    ];
    try {
      await withoutTraffic(async () => {
        for (const [label, clients] of cases) await expectInvalid(label, () => new LockManager(clients as object[], BASE));
      });
    } finally {
      otherIo.disconnect();
    }
  });

  test('one server under two names is refused, and the message says what is compared', async () => {
    const port = node.port;
    const loopbackIo = new Redis(port, { lazyConnect: true }); // ioredis's default host: localhost
    const numericIo = new Redis({ host: '127.0.0.1', port, lazyConnect: true });
    const nodeRedis = createClient({ socket: { host: '::1', port } });
    const cases: Array<[string, unknown[], RegExp]> = [
      ['the same URL twice', [node.url, node.url], /^clients\[1\] is the same URL as clients\[0\]$/],
      ['the same client twice', [ioClient, ioClient], /^clients\[1\] is the same client as clients\[0\]$/],
      ['localhost and 127.0.0.1', [`redis://localhost:${port}`, `redis://127.0.0.1:${port}`], /same server as clients\[0\]/],
      ['[::1] and localhost', ['redis://a.example:1', `redis://[::1]:${port}`, `redis://LOCALHOST:${port}`], /^clients\[2\].*clients\[1\]/],
      ['new Redis(port) and new Redis({ host: 127.0.0.1, port })', [loopbackIo, numericIo], /same server/],
      ['a node-redis client on ::1 and a URL on 127.0.0.1', [nodeRedis, node.url], /same server/],
      ['two databases of one server', [`${node.url}/1`, `${node.url}/2`], /same server/],
    ];
    try {
      await withoutTraffic(() => {
        for (const [label, clients, message] of cases) {
          assert.throws(
            () => new LockManager(clients as object[], BASE),
            (error: Error) => {
              assert.ok(error instanceof InvalidArgumentError, `${label}: ${String(error)}`);
              assert.match(error.message, message, label);
              if (/server/.test(error.message)) assert.match(error.message, /host names are not resolved/, label);
              return true;
            },
            label,
          );
        }
      });
    } finally {
      loopbackIo.disconnect();
      numericIo.disconnect();
    }
  });

  test('valid edge values are accepted, and construction alone sends nothing', async () => {
    await withoutTraffic(async () => {
      const ok: LockManagerOptions[] = [
        { ttl: MAX_TTL },
        { ttl: 601 },
        { ttl: 4, nodeTimeout: 1, driftFactor: 0.49 },
        { driftFactor: 0 },
        { driftFactor: 0.4999 },
        { acquireTimeout: 0 },
        { acquireTimeout: Infinity },
        { restartQuarantine: false },
        { restartQuarantine: 'auto' },
        { restartQuarantine: 0 },
        { restartQuarantine: 60_000 },
        {},
      ];
      for (const options of ok) {
        for (const clients of [[ioClient], [nrClient]]) {
          const m = new LockManager(clients, options);
          for (const [key, value] of Object.entries(options)) assert.equal(m.options[key as keyof LockManagerOptions], value);
          await m.close();
        }
      }
    });
  });
});

describe('calls: invalid arguments reject before any command', () => {
  const kinds: Array<[string, () => LockManager]> = [
    ['ioredis', () => manager([ioClient])],
    ['node-redis', () => manager([nrClient])],
    ['URL', () => manager([node.url])],
  ];

  for (const [kind, make] of kinds) {
    test(`${kind}: resources, options, withLock and extend`, async () => {
      const m = make();
      // Connect and warm up first (a URL manager connects in the background), then hold a lock to extend.
      let lock: Lock | null = null;
      for (let i = 0; i < 50 && !lock; i++) lock = await m.tryAcquire('held').catch(() => null);
      assert.ok(lock, `${kind}: could not take a warm-up lock`);
      try {
        await withoutTraffic(async () => {
          for (const [label, r] of INVALID_RESOURCES) {
            const res = r as string;
            await expectInvalid(`acquire(${label})`, () => m.acquire(res));
            await expectInvalid(`tryAcquire(${label})`, () => m.tryAcquire(res));
            await expectInvalid(`withLock(${label})`, () => m.withLock(res, async () => 'ran'));
            await expectInvalid(`inspect(${label})`, () => m.inspect(res));
            await expectInvalid(`forceRelease(${label})`, () => m.forceRelease(res));
          }
          await expectInvalid('inspect(array)', () => m.inspect(['a'] as unknown as string));
          await expectInvalid('forceRelease(array)', () => m.forceRelease(['a'] as unknown as string));

          const badAcquireOptions: Array<[string, unknown]> = [
            ['ttl 0', { ttl: 0 }],
            ['ttl -10', { ttl: -10 }],
            ['ttl 1.5', { ttl: 1.5 }],
            ['ttl NaN', { ttl: NaN }],
            ['ttl Infinity', { ttl: Infinity }],
            ['ttl 2^31', { ttl: 2 ** 31 }],
            ['ttl string', { ttl: '1000' }],
            ['ttl with nodeTimeout >= ttl/3', { ttl: 300 }],
            ['timeout -1', { timeout: -1 }],
            ['timeout NaN', { timeout: NaN }],
            ['timeout string', { timeout: '5' }],
            ['signal not an AbortSignal', { signal: { aborted: false } }],
            ['fair a string', { fair: 'yes' }],
            ['retry.minDelay -1', { retry: { minDelay: -1 } }],
            ['retry.factor 0.5', { retry: { factor: 0.5 } }],
            ['retry.jitter', { retry: { jitter: 'some' } }],
            ['options a string', 'soon'],
            ['options null', null],
          ];
          for (const [label, opts] of badAcquireOptions) {
            const o = opts as Parameters<LockManager['acquire']>[1];
            await expectInvalid(`acquire(${label})`, () => m.acquire('free', o));
            if (!label.startsWith('timeout')) await expectInvalid(`tryAcquire(${label})`, () => m.tryAcquire('free', o));
            await expectInvalid(`withLock(${label})`, () => m.withLock('free', async () => 'ran', o));
          }
          let ran = false;
          const fn = async (): Promise<void> => void (ran = true);
          await expectInvalid('withLock(maxHold -1)', () => m.withLock('free', fn, { maxHold: -1 }));
          await expectInvalid('withLock(maxHold NaN)', () => m.withLock('free', fn, { maxHold: NaN }));
          await expectInvalid("withLock(autoExtend 'yes')", () => m.withLock('free', fn, { autoExtend: 'yes' as unknown as boolean }));
          await expectInvalid('withLock(no function)', () => m.withLock('free', 'fn' as unknown as () => Promise<void>));
          assert.equal(ran, false, 'fn must not run when the arguments are invalid');

          const held = lock as Lock;
          for (const ttl of [0, -1, 1.5, NaN, Infinity, 2 ** 31, 300]) await expectInvalid(`extend(${ttl})`, () => held.extend(ttl));
          await expectInvalid('extend(string)', () => held.extend('1000' as unknown as number));
        });
        assert.ok(lock.isValid(), 'an invalid extend() must not cost the lock');
      } finally {
        await lock.release();
      }
    });
  }
});

/** The contract's rule for a resource argument. */
function validResource(r: unknown): boolean {
  const list = Array.isArray(r) ? (r as unknown[]) : [r];
  if (list.length === 0) return false;
  if (!list.every((x) => typeof x === 'string' && x.length > 0)) return false;
  return new Set(list).size === list.length;
}

const trickyString = fc.string({
  unit: fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom('{', '}', '%', '%7B', ':', ' ', '\n', '\0', '*', '?', '[') },
    { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  ),
  minLength: 1,
  maxLength: 40,
});
const validResourceString = fc.oneof(
  { weight: 4, arbitrary: trickyString },
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 2_000, maxLength: 20_000 }) },
);

describe('property: resources', () => {
  test('anything that is not a valid resource is rejected, with no traffic', async () => {
    const m = manager([ioClient]);
    const arbitrary = fc.oneof(
      fc.anything(),
      fc.array(fc.oneof(fc.string({ maxLength: 3 }), fc.integer(), fc.constant(null)), { maxLength: 5 }),
      fc.constant(''),
    );
    await withoutTraffic(async () => {
      await fc.assert(
        fc.asyncProperty(arbitrary, async (r) => {
          fc.pre(!validResource(r));
          await expectInvalid('tryAcquire', () => m.tryAcquire(r as string));
          await expectInvalid('acquire', () => m.acquire(r as string));
        }),
        { numRuns: 300 },
      );
    });
  });

  for (const [kind, clients] of [
    ['ioredis', () => [ioClient]],
    ['node-redis', () => [nrClient]],
  ] as const) {
    test(`${kind}: any valid resource (unicode, braces, very long) round-trips through Redis under its own key`, async () => {
      const m = manager(clients());
      await fc.assert(
        fc.asyncProperty(validResourceString, async (r) => {
          const lock = await m.tryAcquire(r);
          assert.ok(lock, 'a free resource must be acquired');
          try {
            assert.deepEqual(lock.resources, [r]);
            // the key Redis holds is exactly the documented one
            assert.equal(await admin.get(keysFor('fencelock:', r).lock), lock.value);
            const info = await m.inspect(r);
            assert.equal(info.resource, r);
            assert.equal(info.holder, lock.value);
          } finally {
            assert.deepEqual(await lock.release(), { released: 1, nodes: 1 });
          }
          assert.equal(await admin.exists(keysFor('fencelock:', r).lock), 0);
        }),
        { numRuns: 40 },
      );
    });
  }

  test('valid resource lists lock every resource, all or none', async () => {
    const m = manager([ioClient]);
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(trickyString, { minLength: 1, maxLength: 5 }), async (rs) => {
        const lock = await m.tryAcquire(rs);
        assert.ok(lock);
        try {
          assert.deepEqual([...lock.resources].sort(), [...rs].sort());
          for (const r of rs) assert.equal(await admin.get(keysFor('fencelock:', r).lock), lock.value);
        } finally {
          assert.equal((await lock.release()).released, 1);
        }
        for (const r of rs) assert.equal(await admin.exists(keysFor('fencelock:', r).lock), 0);
      }),
      { numRuns: 25 },
    );
  });
});

/** Numbers of every kind: fractions, negatives, huge, NaN, infinities, and the edges of each range. */
const anyNumber = fc.oneof(
  fc.double(),
  fc.integer({ min: -5, max: 100_000 }),
  fc.double({ min: -1, max: 1 }),
  fc.constantFrom(NaN, Infinity, -Infinity, -0, 0, 1, 2, 3, 0.5, 0.4999999, 599, 600, 601, MAX_TTL, 2 ** 31, 1e-300, Number.MAX_VALUE),
);

describe('property: numeric options', () => {
  /** The contract's rules, on the options with defaults filled in. */
  function contractValid(o: {
    ttl: number;
    driftFactor: number;
    nodeTimeout: number;
    acquireTimeout: number;
    restartQuarantine: unknown;
  }): boolean {
    const { ttl, driftFactor: df, nodeTimeout, acquireTimeout, restartQuarantine: q } = o;
    if (!(typeof df === 'number' && df >= 0 && df < 0.5)) return false;
    if (!(Number.isInteger(ttl) && ttl >= 1 && ttl <= MAX_TTL && ttl > ttl * df + 2)) return false;
    if (!(typeof nodeTimeout === 'number' && nodeTimeout < ttl / 3)) return false;
    if (Number.isNaN(acquireTimeout) || acquireTimeout < 0) return false;
    return q === 'auto' || q === false || (Number.isInteger(q) && (q as number) >= 0);
  }
  /** What the contract allows but a sane implementation may still refuse (nodeTimeout not a positive integer, absurd quarantines). */
  function plainlyValid(o: Parameters<typeof contractValid>[0]): boolean {
    return (
      contractValid(o) &&
      Number.isInteger(o.nodeTimeout) &&
      o.nodeTimeout >= 1 &&
      (typeof o.restartQuarantine !== 'number' || o.restartQuarantine <= MAX_TTL)
    );
  }

  test('LockManager options: accepted ones are valid per the contract, contract-invalid ones throw InvalidArgumentError', async () => {
    const keys = ['ttl', 'driftFactor', 'nodeTimeout', 'acquireTimeout', 'restartQuarantine'] as const;
    const options = fc.record(
      {
        ttl: fc.oneof(anyNumber, fc.integer({ min: 601, max: MAX_TTL })),
        driftFactor: fc.oneof(anyNumber, fc.double({ min: 0, max: 0.5, maxExcluded: true, noNaN: true })),
        nodeTimeout: fc.oneof(anyNumber, fc.integer({ min: 1, max: 199 })),
        acquireTimeout: anyNumber,
        restartQuarantine: fc.oneof(anyNumber, fc.constantFrom<unknown>('auto', 'observed', false)),
      },
      { requiredKeys: [] },
    );
    await withoutTraffic(async () => {
      await fc.assert(
        fc.asyncProperty(options, async (opts) => {
          const filled = {
            ttl: opts.ttl ?? 30_000,
            driftFactor: opts.driftFactor ?? 0.01,
            nodeTimeout: opts.nodeTimeout ?? 200,
            acquireTimeout: opts.acquireTimeout ?? 10_000,
            restartQuarantine: opts.restartQuarantine ?? 'auto',
          };
          let m: LockManager | undefined;
          try {
            m = new LockManager([ioClient], opts as LockManagerOptions);
          } catch (error) {
            assert.ok(error instanceof InvalidArgumentError, `not an InvalidArgumentError: ${String(error)}`);
            assert.equal(error.code, 'INVALID_ARGUMENT');
            assert.ok(!plainlyValid(filled), `rejected valid options ${JSON.stringify(opts)}: ${error.message}`);
            return;
          }
          try {
            assert.ok(contractValid(filled), `accepted invalid options ${JSON.stringify(opts)}`);
            for (const k of keys) if (opts[k] !== undefined) assert.ok(Object.is(m.options[k], opts[k]), `${k} was changed`);
          } finally {
            await m.close();
          }
        }),
        { numRuns: 1_000 },
      );
    });
  });

  test('acquire ttl and timeout: rejected before any command, or accepted, valid, and really used', async () => {
    const m = manager([ioClient]);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('ttl' as const, 'timeout' as const),
        fc.oneof(anyNumber, fc.integer({ min: 301, max: MAX_TTL })),
        async (key, v) => {
          const valid =
            key === 'ttl' ? Number.isInteger(v) && v >= 1 && v <= MAX_TTL && v > v * 0.01 + 2 && 100 < v / 3 : !Number.isNaN(v) && v >= 0;
          const before = await serverActivity();
          let lock: Lock;
          try {
            lock = await m.acquire('numeric', key === 'ttl' ? { ttl: v, timeout: 0 } : { timeout: v });
          } catch (error) {
            assert.ok(error instanceof InvalidArgumentError, `${key}=${v}: ${String(error)}`);
            assert.ok(!valid, `${key}=${v} is valid but was rejected: ${error.message}`);
            assert.deepEqual(await serverActivity(), before, 'a rejected call reached Redis');
            return;
          }
          try {
            assert.ok(valid, `${key}=${v} is invalid but was accepted`);
            if (key === 'ttl') {
              const pttl = await admin.pttl(keysFor('fencelock:', 'numeric').lock);
              assert.ok(pttl > 0 && pttl <= v, `the node holds the lease for ${pttl} ms, asked ${v}`);
            }
          } finally {
            await lock.release();
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
