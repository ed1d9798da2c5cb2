import { cappedWaitMs } from './delivery.worker.js';

describe('cappedWaitMs', () => {
  it('starts at 250 ms and doubles with each wait', () => {
    expect([0, 1, 2, 3].map((waits) => cappedWaitMs(waits, () => 0))).toEqual([250, 500, 1000, 2000]);
  });

  it('never waits more than 5 s plus half of it as jitter', () => {
    expect(cappedWaitMs(5, () => 0)).toBe(5000);
    expect(cappedWaitMs(1000, () => 0.999)).toBeLessThan(7500);
  });
});
