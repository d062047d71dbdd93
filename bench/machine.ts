// What the results were measured on: machine, Node, Redis, library versions, fencelock's commit.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunReport } from './types.js';

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.dirname(BENCH);

export function machineInfo(redisVersion: string): RunReport['machine'] {
  const cpus = os.cpus();
  return {
    platform: `${os.type()} ${os.release()}`,
    arch: os.arch(),
    cpus: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    redis: redisVersion,
  };
}

/** Version of an installed package: bench/node_modules first (the compared libraries), then the root's. Packages
 * installed under an alias (redlock-v4) are shown with their real name: `redlock@4.2.0`. */
export function packageVersion(pkg: string): string {
  if (pkg === 'fencelock') return readPackage(path.join(ROOT, 'package.json'))?.version ?? 'unknown';
  for (const dir of [path.join(BENCH, 'node_modules'), path.join(ROOT, 'node_modules')]) {
    const p = readPackage(path.join(dir, pkg, 'package.json'));
    if (p?.version) return p.name && p.name !== pkg ? `${p.name}@${p.version}` : p.version;
  }
  return 'not installed';
}

function readPackage(file: string): { name?: string; version?: string } | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
  } catch {
    return undefined;
  }
}

/** HEAD, with `+dirty` when src/ has uncommitted changes (the numbers then belong to a work in progress). */
export function fencelockCommit(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' }).trim();
    return dirty ? `${head}+dirty` : head;
  } catch {
    return 'unknown';
  }
}
