// What the duplicate check of the client list takes as one server (options.test.ts checks the manager refuses them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverKey } from '../../../src/redis/adapters/same-server.js';

test('the loopback aliases, the brackets of an IPv6 host, case and the database number make no difference', () => {
  const one = ['localhost:7501', '127.0.0.1:7501', '::1:7501', '[::1]:7501', 'LocalHost:7501', '127.0.0.1:7501/3', '0:0:0:0:0:0:0:1:7501'];
  assert.deepEqual(new Set(one.map(serverKey)), new Set(['loopback:7501']));
  assert.equal(serverKey('Redis-A.example:6379/2'), serverKey('redis-a.example:6379'));
});

test('another port, another host, another loopback address or a host name not resolved: different servers', () => {
  const different = ['127.0.0.1:7501', '127.0.0.1:7502', '127.0.0.2:7501', '10.0.0.1:7501', 'redis-a:7501', '/tmp/redis.sock'];
  assert.equal(new Set(different.map(serverKey)).size, different.length);
});

test('clusters, sentinels and socket paths are compared as named', () => {
  for (const name of ['cluster(127.0.0.1:7000)', 'sentinel(mymaster@localhost:26379)', '/var/run/redis.sock'])
    assert.equal(serverKey(name), name);
});
