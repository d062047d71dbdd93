// A stand-in for one Redis node's ioredis client that answers at once from memory (no network, no Redis, nothing
// checked): for diagnostics of fencelock's own JavaScript alone (js-only.ts, functions-per-pair.ts), never for a
// benchmark or a test. Acquire (EVAL/EVALSHA with 2+ keys) is granted with the stand-in's next fence, so that the
// grants of several stand-ins agree as real nodes' do; release (1 key) deletes.
export function standIn(port: number): object {
  let fence = 0;
  const client = {
    status: 'ready',
    options: { host: 'stand-in', port },
    call(_command: string, ...args: string[]): Promise<unknown> {
      if (args[1] !== '1') return Promise.resolve(`1 ${++fence} epoch${port}ABCDEF -1 1 10000`);
      return Promise.resolve(1);
    },
    duplicate: () => client,
    connect: async () => undefined,
    subscribe: async () => undefined,
    unsubscribe: async () => undefined,
    quit: async () => undefined,
    disconnect: () => undefined,
    on: () => client,
    once: () => client,
    removeListener: () => client,
  };
  return client;
}
