import { jest } from '@jest/globals';
import { WorkerShare } from './worker-share.js';

describe('WorkerShare', () => {
  it('lets one workspace alone use all but a quarter of the slots', () => {
    const share = new WorkerShare(8);
    const admitted = Array.from({ length: 8 }, () => share.enter('a')).filter(Boolean).length;
    expect(admitted).toBe(6);
  });

  it('keeps a quarter of the slots for other workspaces', () => {
    const share = new WorkerShare(8);
    for (let i = 0; i < 6; i++) share.enter('a');
    expect(share.enter('a')).toBe(false);
    expect(share.enter('b')).toBe(true);
    expect(share.enter('c')).toBe(true);
  });

  it('hands a freed slot to a job of the same workspace waiting in process', async () => {
    const share = new WorkerShare(4);
    for (let i = 0; i < 3; i++) share.enter('a');
    expect(share.enter('a')).toBe(false);
    const turn = share.waitTurn('a', 1_000);
    expect(share.leave('a')).toBeUndefined();
    await expect(turn).resolves.toBe(true);
    expect(share.enter('a')).toBe(false); // the slot went to the waiting job
  });

  describe('on a fake clock (timers and Date.now), so a loaded machine cannot stretch the waits', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    it('keeps waiting in process while the workspace frees slots, however long its line', async () => {
      const share = new WorkerShare(4);
      for (let i = 0; i < 3; i++) share.enter('a');
      const sleep = async (ms: number) => jest.advanceTimersByTimeAsync(ms);
      const first = share.waitTurn('a', 40);
      const second = share.waitTurn('a', 40);
      await sleep(30);
      expect(share.leave('a')).toBeUndefined(); // to the first waiter
      await expect(first).resolves.toBe(true);
      await sleep(30);
      expect(share.leave('a')).toBeUndefined(); // 60 ms after the second began waiting: it still waits
      await expect(second).resolves.toBe(true);
    });

    it('gives up the in-process wait after its time, and wakes a parked job when a slot frees', async () => {
      const share = new WorkerShare(4);
      for (let i = 0; i < 3; i++) share.enter('a');
      const wait = share.waitTurn('a', 10);
      await jest.advanceTimersByTimeAsync(10);
      await expect(wait).resolves.toBe(false);
      expect(share.park('a', 'job-1', 'h:1')).toBe(false);
      expect(share.leave('a')).toEqual({ jobId: 'job-1', destination: 'h:1' });
    });
  });

  it('names no job that came back by itself: a later wait of it (a retry) is not cut short', () => {
    const share = new WorkerShare(4);
    for (let i = 0; i < 3; i++) share.enter('a');
    share.park('a', 'job-1', 'h:1');
    share.park('a', 'job-2', 'h:1');
    share.forget('a', 'job-1'); // job-1 ran at its own time
    expect(share.leave('a')).toEqual({ jobId: 'job-2', destination: 'h:1' });
    expect(share.leave('a')).toBeUndefined();
  });
});
