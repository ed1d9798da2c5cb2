import { WorkerShare } from './worker-share.js';

describe('WorkerShare', () => {
  it('lets one workspace alone use all but a quarter of the sockets', () => {
    const share = new WorkerShare(8);
    const admitted = Array.from({ length: 8 }, () => share.enter('a')).filter(Boolean).length;
    expect(admitted).toBe(6);
    expect(share.full()).toEqual(['a']);
  });

  it('keeps a quarter of the sockets for other workspaces, and never gives more than there are', () => {
    const share = new WorkerShare(8);
    for (let i = 0; i < 6; i++) share.enter('a');
    expect(share.enter('a')).toBe(false);
    expect(share.enter('b')).toBe(true);
    expect(share.enter('c')).toBe(true);
    expect(share.free).toBe(0);
    expect(share.enter('d')).toBe(false);
  });

  it('tells the drains waiting that a socket came back', async () => {
    const share = new WorkerShare(4);
    for (let i = 0; i < 3; i++) share.enter('a');
    let woken = false;
    const waiting = share.freed().then(() => (woken = true));
    expect(woken).toBe(false);
    share.leave('a');
    await waiting;
    expect(woken).toBe(true);
    expect(share.full()).toEqual([]);
  });
});
