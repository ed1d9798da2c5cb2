/**
 * Counts events and wakes whoever waits for the next one. A waiter names the count it acted on: an event
 * that came while it was busy elsewhere wakes it at once instead of being missed. Waiters share one
 * promise, so a wait that times out leaves nothing behind.
 */
export class Signal {
  count = 0;
  private waiting: { promise: Promise<void>; wake: () => void } | undefined;

  /** Resolves once the count is past `seen` (by default: at the next event). */
  after(seen = this.count): Promise<void> {
    if (this.count > seen) return Promise.resolve();
    if (!this.waiting) {
      let wake!: () => void;
      const promise = new Promise<void>((resolve) => (wake = resolve));
      this.waiting = { promise, wake };
    }
    return this.waiting.promise;
  }

  /**
   * Resolves true once the count is past `seen`, or false after `ms`: a plain timer, cleared by the event (an
   * AbortController per wait cost more than the wait, once per delivery).
   */
  within(seen: number, ms: number): Promise<boolean> {
    if (this.count > seen) return Promise.resolve(true);
    if (ms === Infinity) return this.after(seen).then(() => true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      void this.after(seen).then(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  fire(): void {
    this.count++;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.wake();
  }
}
