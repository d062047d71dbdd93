/**
 * Flaws the chaos generator plants on purpose (`npm run chaos -- --unsafe <name>`, test/chaos), to show that its
 * checker finds what each protection prevents. Not exported from the package: only a chaos worker sets one, in
 * its own process. Every one is off in use.
 */
export const plantedFlaws = {
  /**
   * A waiter woken by a release that names it takes the wake-up as its grant, with no confirming request: valid
   * for its ttl from the wake-up, with the fence after the last counter it saw. The handed key holds only what
   * was left of the waiter's place in line, and no node issued that fence (wait.ts confirm: why it confirms).
   */
  wakeupGrant: false,
};
