import { jest } from '@jest/globals';
import { Batcher } from './batcher.js';

/** A batcher whose runs answer each item doubled and stay out until `finish()`; `runs` lists each run's items. */
function recording(maxConcurrent: number, maxBatch: number, lingerMs?: number) {
  const runs: number[][] = [];
  const out: (() => void)[] = [];
  const batcher = new Batcher<number, number>(
    (items) => {
      runs.push(items);
      return new Promise((resolve) => out.push(() => resolve(items.map((i) => i * 2))));
    },
    maxConcurrent,
    maxBatch,
    lingerMs,
  );
  const finish = async () => {
    out.splice(0).forEach((answer) => answer());
    await Promise.resolve();
    await Promise.resolve();
  };
  return { batcher, runs, finish };
}

describe('Batcher', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('runs an item alone at once, and groups those that arrive while the runs are out', async () => {
    const { batcher, runs, finish } = recording(1, 10);
    const first = batcher.add(1);
    expect(runs).toEqual([[1]]);
    const rest = [batcher.add(2), batcher.add(3)];
    expect(runs).toHaveLength(1);
    await finish();
    expect(runs).toEqual([[1], [2, 3]]);
    await finish();
    await expect(Promise.all([first, ...rest])).resolves.toEqual([2, 4, 6]);
  });

  it('with a linger, waits that long for company before the run', async () => {
    const { batcher, runs, finish } = recording(2, 10, 20);
    const items = [batcher.add(1)];
    jest.advanceTimersByTime(19);
    items.push(batcher.add(2));
    expect(runs).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(runs).toEqual([[1, 2]]);
    await finish();
    await expect(Promise.all(items)).resolves.toEqual([2, 4]);
  });

  it('starts a full batch without lingering, and what waited during a run as soon as the run ends', async () => {
    const { batcher, runs, finish } = recording(1, 2, 20);
    void batcher.add(1);
    void batcher.add(2);
    expect(runs).toEqual([[1, 2]]);
    void batcher.add(3);
    await finish();
    expect(runs).toEqual([[1, 2], [3]]);
  });
});
