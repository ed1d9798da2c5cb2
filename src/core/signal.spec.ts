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
});
