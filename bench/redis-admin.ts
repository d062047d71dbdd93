// Admin connections to the benchmark's own nodes: reset between cells, and count commands with INFO commandstats.
import { Redis } from 'ioredis';
import type { CommandCount } from './types.js';

export interface CommandSnapshot {
  /** calls per command, one map per node */
  nodes: Map<string, number>[];
  /** INFO calls this admin had sent to each node before this snapshot: they show up in later snapshots */
  infoSent: number;
  /** CPU the redis-server processes have used so far (user + system, all nodes), µs */
  cpuUs: number;
}

export class RedisAdmin {
  private infoSent = 0;

  private constructor(private readonly clients: Redis[]) {}

  static async connect(urls: readonly string[]): Promise<RedisAdmin> {
    const clients = urls.map((url) => new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectionName: 'bench-admin' }));
    await Promise.all(clients.map((c) => c.connect()));
    return new RedisAdmin(clients);
  }

  /** Empty data, script cache and statistics on every node: each cell starts from the same state. */
  async reset(): Promise<void> {
    await Promise.all(
      this.clients.map(async (c) => {
        await c.flushall();
        await c.script('FLUSH');
        await c.config('RESETSTAT');
      }),
    );
  }

  async redisVersion(): Promise<string> {
    const info = await this.clients[0]?.info('server');
    return /redis_version:(\S+)/.exec(info ?? '')?.[1] ?? 'unknown';
  }

  /** Calls per command on each node. Its own INFO calls are counted by later snapshots; diff() removes them. */
  async snapshot(): Promise<CommandSnapshot> {
    const infoSent = this.infoSent++;
    const infos = await Promise.all(this.clients.map((c) => c.info('commandstats', 'cpu')));
    const nodes = infos.map(parseCommandStats);
    const cpuUs = infos.reduce((sum, info) => sum + parseCpuUs(info), 0);
    return { nodes, infoSent, cpuUs };
  }

  /** Commands between two snapshots, summed over nodes, without this admin's own INFO calls. */
  diff(before: CommandSnapshot, after: CommandSnapshot): CommandCount {
    const byCommand: Record<string, number> = {};
    const ownInfo = after.infoSent - before.infoSent;
    after.nodes.forEach((node, i) => {
      const prev = before.nodes[i] ?? new Map<string, number>();
      for (const [cmd, calls] of node) {
        const delta = calls - (prev.get(cmd) ?? 0) - (cmd === 'info' ? ownInfo : 0);
        if (delta > 0) byCommand[cmd] = (byCommand[cmd] ?? 0) + delta;
      }
    });
    const total = Object.values(byCommand).reduce((a, b) => a + b, 0);
    return { total, perOp: null, byCommand, redisCpuUs: after.cpuUs - before.cpuUs, redisCpuPerOpUs: null };
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.quit().catch(() => c.disconnect())));
  }
}

/** `cmdstat_set:calls=12,usec=...` lines → Map('set' → 12). Subcommands keep their `|` form, e.g. `script|load`. */
export function parseCommandStats(info: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of info.split(/\r?\n/)) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (m?.[1] && m[2]) out.set(m[1], Number(m[2]));
  }
  return out;
}

/** `used_cpu_sys:1.23` and `used_cpu_user:4.56` (seconds) → their sum in µs. */
export function parseCpuUs(info: string): number {
  const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return Math.round((field('used_cpu_sys') + field('used_cpu_user')) * 1e6);
}
