// Types for the two redlock versions installed under aliases. redlock@4.2.0 ships none; redlock@5.0.0-beta.2 ships
// dist/index.d.ts but its package.json "exports" does not point at it. Only what the adapters use is declared.
declare module 'redlock-v4' {
  import { EventEmitter } from 'node:events';

  namespace Redlock {
    interface Options {
      driftFactor?: number;
      retryCount?: number;
      retryDelay?: number;
      retryJitter?: number;
    }
    interface Lock {
      resource: string | string[];
      value: string;
      expiration: number;
      unlock(): PromiseLike<void>;
      extend(ttl: number): PromiseLike<Lock>;
    }
  }

  class Redlock extends EventEmitter {
    constructor(clients: unknown[], options?: Redlock.Options);
    lock(resource: string | string[], ttl: number): PromiseLike<Redlock.Lock>;
    quit(): PromiseLike<void>;
  }

  export = Redlock;
}

declare module 'redlock-v5' {
  import { EventEmitter } from 'node:events';

  export interface Settings {
    readonly driftFactor: number;
    readonly retryCount: number;
    readonly retryDelay: number;
    readonly retryJitter: number;
    readonly automaticExtensionThreshold: number;
  }

  export class Lock {
    readonly resources: string[];
    readonly value: string;
    expiration: number;
    release(): Promise<unknown>;
    extend(duration: number): Promise<Lock>;
  }

  export default class Redlock extends EventEmitter {
    constructor(clients: Iterable<unknown>, settings?: Partial<Settings>);
    acquire(resources: string[], duration: number, settings?: Partial<Settings>): Promise<Lock>;
    using<T>(resources: string[], duration: number, routine: (signal: AbortSignal) => Promise<T>): Promise<T>;
    quit(): Promise<void>;
  }
}
