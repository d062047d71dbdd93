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
    process.exit(70);
  }, ms).unref();
}
