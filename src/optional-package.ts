// The client libraries are optional peer dependencies: a manager given a URL loads the one it needs. Whether it
// is installed is known in a few milliseconds, so the manager asks at construction and every call waits for the
// answer: a missing package fails the first call at once with MissingPackageError, instead of each node's
// connection failing until the acquire's timeout ends it as a QuorumError.
import { MissingPackageError } from './errors.js';

/** The client libraries a URL needs. */
export type OptionalPackage = 'ioredis' | 'etcd3' | 'node-zookeeper-client';

// Literal specifiers, so that the CommonJS build turns each into a require() of the package.
const loaders: Record<OptionalPackage, () => Promise<unknown>> = {
  ioredis: () => import('ioredis'),
  etcd3: () => import('etcd3'),
  'node-zookeeper-client': () => import('node-zookeeper-client'),
};

/** Loads `name`, or rejects with MissingPackageError saying that `neededBy` (a URL, a command) needs it. */
export async function loadOptional(name: OptionalPackage, neededBy: string): Promise<void> {
  try {
    await loaders[name]();
  } catch (error) {
    throw new MissingPackageError(name, neededBy, error);
  }
}

/** Whether the packages a manager needs are there: asked once, answered for every call after. */
export class PackageCheck {
  #pending: Promise<void> | undefined;
  #error: Error | undefined;

  constructor(load: Promise<void> | undefined) {
    this.#pending = load?.then(
      () => {
        this.#pending = undefined;
      },
      (error: Error) => {
        this.#error = error;
        this.#pending = undefined;
        throw error;
      },
    );
    // Nobody may call: the failure is kept for the first call, never an unhandled rejection.
    this.#pending?.catch(() => undefined);
  }

  /** undefined when every package loaded (the usual case: nothing to wait for); else the wait, or the failure. */
  wait(): Promise<void> | undefined {
    if (this.#error) return Promise.reject(this.#error);
    return this.#pending;
  }
}
