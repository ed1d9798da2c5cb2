import { jest } from '@jest/globals';
import { Signal } from './signal.js';

describe('Signal', () => {
  it('wakes a waiter at the next event', async () => {
    const signal = new Signal();
    let woken = false;
    const waiting = signal.after().then(() => (woken = true));
    await Promise.resolve();
    expect(woken).toBe(false);
    signal.fire();
    await waiting;
    expect(woken).toBe(true);
  });

  it('answers at once a waiter that names a count already passed: an event it was not waiting for is not lost', async () => {
    const signal = new Signal();
    const seen = signal.count;
    signal.fire(); // while the waiter was busy elsewhere
    let woken = false;
    void signal.after(seen).then(() => (woken = true));
    await Promise.resolve();
    expect(woken).toBe(true);
  });

  it('gives every waiter between two events the same promise', () => {
    const signal = new Signal();
    const first = signal.after();
    expect(signal.after()).toBe(first);
    signal.fire();
    expect(signal.after()).not.toBe(first);
  });

  it('within: true at the event, false when the time runs out first, true at once for a count already passed', async () => {
    jest.useFakeTimers();
    try {
      const signal = new Signal();
      const byEvent = signal.within(signal.count, 1_000);
      signal.fire();
      await expect(byEvent).resolves.toBe(true);
      const byTime = signal.within(signal.count, 1_000);
      jest.advanceTimersByTime(1_000);
      await expect(byTime).resolves.toBe(false);
      await expect(signal.within(signal.count - 1, 1_000)).resolves.toBe(true);
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});
