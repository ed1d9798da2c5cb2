import { jest } from '@jest/globals';
import { TurnWaits } from './turn-waits.js';

// On a fake clock (timers and Date.now), so a loaded machine cannot stretch the waits.
describe('TurnWaits', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());
  const sleep = (ms: number) => jest.advanceTimersByTimeAsync(ms);

  it('gives a waiting job its turn when a release wakes it', async () => {
    const turns = new TurnWaits(4, 100, 1_000);
    const turn = turns.wait('job-1', 'host-a');
    await sleep(10);
    expect(turns.wake('job-1')).toBe(true);
    await expect(turn).resolves.toBe(true);
    expect(turns.wake('job-1')).toBe(false); // woken once: it waits no more
  });

  it('does not know a job that is not waiting here (parked, or waiting in another worker)', () => {
    expect(new TurnWaits(4, 100, 1_000).wake('job-1')).toBe(false);
  });

  it('keeps waiting while its host frees slots here', async () => {
    const turns = new TurnWaits(4, 100, 1_000);
    let ended = false;
    const turn = turns.wait('job-1', 'host-a').then((woken) => ((ended = true), woken));
    for (let i = 0; i < 5; i++) {
      await sleep(80);
      turns.released('host-a');
    }
    expect(ended).toBe(false); // 400 ms in, a release every 80 ms
    turns.released('host-b'); // another host's releases say nothing of this one
    await sleep(99);
    expect(ended).toBe(false);
    await sleep(1);
    await expect(turn).resolves.toBe(false); // 100 ms without a release at its host: it parks
  });

  it('parks after the longest wait however busy its host (a wake that never came)', async () => {
    const turns = new TurnWaits(4, 100, 1_000);
    let ended = false;
    const turn = turns.wait('job-1', 'host-a').then((woken) => ((ended = true), woken));
    for (let i = 0; i < 19; i++) {
      await sleep(50);
      turns.released('host-a');
    }
    expect(ended).toBe(false); // 950 ms in
    await sleep(50);
    await expect(turn).resolves.toBe(false);
  });

  it('sends the waiters of a host that frees nothing (hanging receivers) to park after the idle time', async () => {
    const turns = new TurnWaits(4, 100, 1_000);
    const turn = turns.wait('job-1', 'host-a');
    await sleep(100);
    await expect(turn).resolves.toBe(false);
    expect(turns.wake('job-1')).toBe(false);
  });

  it('lets at most `most` jobs wait at once: the next parks at once, and may wait once one left', async () => {
    const turns = new TurnWaits(2, 100, 1_000);
    const first = turns.wait('job-1', 'host-a');
    void turns.wait('job-2', 'host-b');
    await expect(turns.wait('job-3', 'host-a')).resolves.toBe(false);
    turns.wake('job-1');
    await expect(first).resolves.toBe(true);
    const third = turns.wait('job-3', 'host-a');
    turns.wake('job-3');
    await expect(third).resolves.toBe(true);
  });

  it('counts a host’s idle time from when its first waiter came, not from an older release', async () => {
    const turns = new TurnWaits(4, 100, 1_000);
    turns.released('host-a'); // no waiter: not remembered
    await sleep(500);
    const turn = turns.wait('job-1', 'host-a');
    await sleep(99);
    turns.wake('job-1');
    await expect(turn).resolves.toBe(true);
  });
});
