// One 'abort' listener per signal, shared by every waiter on it. Node's EventTarget checks each new listener
// against all it already has (addEventListener and removeEventListener walk the list), so thousands of
// callers waiting on one signal (the manager's closing signal is every call's) cost time quadratic in their
// number: in a burst of 16,384 acquires that was most of the client's CPU. A Set makes each O(1).

const fanouts = new WeakMap<AbortSignal, Set<() => void>>();

/** Calls `listener` once when `signal` aborts (never if it already has: check `signal.aborted` first). Returns the function that stops listening. */
export function onAbort(signal: AbortSignal, listener: () => void): () => void {
  let listeners = fanouts.get(signal);
  if (!listeners) {
    const created = new Set<() => void>();
    listeners = created;
    fanouts.set(signal, created);
    signal.addEventListener(
      'abort',
      () => {
        fanouts.delete(signal);
        for (const l of created) l();
        created.clear();
      },
      { once: true },
    );
  }
  const set = listeners;
  set.add(listener);
  return () => void set.delete(listener);
}
