// What each fresh project holds: a tsconfig as strict as a user's can be (nodenext, no skipLibCheck), and one
// program written once and compiled twice, as ESM (.mts) and as CommonJS (.cts). It takes a lock on a live
// store with the project's client, then asks for a store whose client library the project lacks.

/** One fresh project: the client library it installs, how its program reaches the store, what it lacks. */
export interface Consumer {
  readonly client: 'ioredis' | 'redis' | 'etcd3' | 'node-zookeeper-client';
  /** import lines, and code that defines `input` (what the manager takes) and `done()` (closes the client) */
  readonly imports: string;
  readonly connect: string;
  /** a manager input that needs a client library the project does not have, and that library */
  readonly missing: { readonly input: string; readonly packageName: string };
}

export const CONSUMERS: readonly Consumer[] = [
  {
    client: 'ioredis',
    imports: "import { Redis } from 'ioredis';",
    connect:
      'const client = new Redis(url);\n  const input = [client];\n  const done = async (): Promise<void> => void (await client.quit());',
    missing: { input: "'etcd://127.0.0.1:1'", packageName: 'etcd3' },
  },
  {
    client: 'redis',
    imports: "import { createClient } from 'redis';",
    connect:
      'const client = await createClient({ url }).connect();\n  const input = [client];\n  const done = async (): Promise<void> => client.destroy();',
    missing: { input: "['redis://127.0.0.1:1']", packageName: 'ioredis' },
  },
  {
    client: 'etcd3',
    imports: "import { Etcd3 } from 'etcd3';",
    connect:
      "const client = new Etcd3({ hosts: url.replace('etcd://', 'http://') });\n  const input = client;\n  const done = async (): Promise<void> => client.close();",
    missing: { input: "'zk://127.0.0.1:1'", packageName: 'node-zookeeper-client' },
  },
  {
    // node-zookeeper-client ships no types (they are @types/node-zookeeper-client): the URL, which needs none.
    client: 'node-zookeeper-client',
    imports: '',
    connect: 'const input = url;\n  const done = async (): Promise<void> => undefined;',
    missing: { input: "['redis://127.0.0.1:1']", packageName: 'ioredis' },
  },
];

export const TSCONFIG = {
  compilerOptions: {
    strict: true,
    module: 'nodenext',
    moduleResolution: 'nodenext',
    target: 'es2022',
    // no DOM: a Node project's, and a third less to check
    lib: ['es2022'],
    skipLibCheck: false,
    types: ['node'],
    outDir: 'out',
  },
  files: ['program.mts', 'program.cts'],
};

/** The program: prints one JSON line (the fence it got, what the missing library did) and exits by itself. */
export const program = (c: Consumer): string => `${c.imports}
import { LockManager, MissingPackageError } from 'fencelock';

async function main(): Promise<void> {
  const url = process.env.STORE_URL as string;
  ${c.connect}
  const locks = new LockManager(input, { ttl: 10_000 });
  const lock = await locks.acquire(process.env.RESOURCE as string, { timeout: 20_000 });
  const fence: bigint = lock.fence;
  await lock.release();
  await locks.close();
  await done();

  // acquireTimeout 30 s: a missing library must fail the call at once, not when this runs out
  const missing = new LockManager(${c.missing.input}, { acquireTimeout: 30_000 });
  const started = performance.now();
  const error: unknown = await missing.acquire('consumer').then(() => undefined, (e: unknown) => e);
  const ms = Math.round(performance.now() - started);
  await missing.close();
  const packageName = error instanceof MissingPackageError ? error.packageName : null;
  const { code, message } = error as { code?: string; message?: string };
  console.log(JSON.stringify({ fence: String(fence), missing: { packageName, code, message, ms } }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
`;
