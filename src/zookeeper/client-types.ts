// node-zookeeper-client's types, as far as the store uses them, written structurally (after
// @types/node-zookeeper-client 1.1.0). fencelock's declarations (dist/*.d.ts) mention these, and a published
// declaration must not import an optional package: a project without node-zookeeper-client (or without its
// @types, which the package itself does not ship) would not build (TS2307).

/** A znode's stat. */
export interface Stat {
  czxid: Buffer;
  mzxid: Buffer;
  ctime: Buffer;
  mtime: Buffer;
  version: number;
  cversion: number;
  aversion: number;
  ephemeralOwner: Buffer;
  dataLength: number;
  numChildren: number;
  pzxid: Buffer;
}

/** The client's connection state (`SYNC_CONNECTED`, `EXPIRED`, …). */
export interface ClientState {
  readonly name: string;
  readonly code: number;
}

/** A ZooKeeper error: `getCode()` is its code (-101 no node, …). */
type Failure = Error | { getCode(): number } | null;
type Watcher = (event: unknown) => void;

export interface Transaction {
  create(path: string, data: Buffer, mode: number): Transaction;
  setData(path: string, data: Buffer, version: number): Transaction;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as in @types/node-zookeeper-client: the results' shape depends on the operations
  commit(callback: (error: Failure, results: any) => void): void;
}

/** A node-zookeeper-client `Client`: the calls the store makes. */
export interface Client {
  connect(): void;
  close(): void;
  getState(): ClientState;
  getSessionId(): Buffer;
  getSessionTimeout(): number;
  on(event: 'state', listener: (state: ClientState) => void): unknown;
  removeListener(event: 'state', listener: (state: ClientState) => void): unknown;
  transaction(): Transaction;
  create(path: string, callback: (error: Failure, path: string) => void): void;
  create(path: string, data: Buffer, mode: number, callback: (error: Failure, path: string) => void): void;
  mkdirp(path: string, callback: (error: Failure, path: string) => void): void;
  exists(path: string, callback: (error: Failure, stat: Stat) => void): void;
  exists(path: string, watcher: Watcher, callback: (error: Failure, stat: Stat) => void): void;
  getChildren(path: string, callback: (error: Failure, children: string[], stat: Stat) => void): void;
  getChildren(path: string, watcher: Watcher, callback: (error: Failure, children: string[], stat: Stat) => void): void;
  getData(path: string, callback: (error: Failure, data: Buffer, stat: Stat) => void): void;
  remove(path: string, version: number, callback: (error: Failure) => void): void;
}
