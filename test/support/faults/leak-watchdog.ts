import { createHook } from 'node:async_hooks';

/** With FENCELOCK_LEAK_DEBUG set: where each live timer was created, so a leaked one can be named. */
const timers = new Map<number, { readonly timer: { hasRef?: () => boolean; _idleTimeout?: number }; readonly stack: string }>();
if (process.env.FENCELOCK_LEAK_DEBUG) {
  createHook({
    init(id, type, _trigger, resource) {
      if (type === 'Timeout') timers.set(id, { timer: resource as never, stack: new Error().stack ?? '' });
    },
    destroy(id) {
      timers.delete(id);
    },
  }).enable();
}

/**
 * For worker entry scripts: once everything is closed the process should end
 * by itself. If it is still running `ms` later, a handle leaked: say so and
 * exit with 70, so the test sees it instead of hanging.
 */
export function armLeakWatchdog(id: string, ms = 5_000): void {
  setTimeout(() => {
    // What keeps the loop alive, by kind (e.g. TCPWRAP, Timeout): where to look first.
    const active = process.getActiveResourcesInfo().filter((r) => r !== 'TTYWRAP');
    console.error(`${id}: still running ${ms / 1000} s after closing everything (a leaked handle: ${active.join(', ')})`);
    for (const { timer, stack } of timers.values()) {
      if (timer.hasRef?.() !== true) continue;
      const frames = stack
        .split('\n')
        .slice(2)
        .filter((l) => !l.includes('node:internal') && !l.includes('leak-watchdog'))
        .slice(0, 6);
      console.error(`${id}: live timer of ${timer._idleTimeout} ms, created at\n${frames.join('\n')}`);
    }
    process.exit(70);
  }, ms).unref();
}
