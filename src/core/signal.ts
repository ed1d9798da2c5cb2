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

  fire(): void {
    this.count++;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.wake();
  }
}
