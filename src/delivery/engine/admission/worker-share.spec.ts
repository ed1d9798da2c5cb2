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

  it('wakes the drains waiting for a socket one at a time, in turn, one per socket that comes back', async () => {
    const share = new WorkerShare(4);
    for (let i = 0; i < 3; i++) share.enter('a');
    share.enter('b');
    const woken: string[] = [];
    const first = share.line();
    const second = share.line();
    const third = share.line();
    void first.promise.then(() => woken.push('first'));
    void second.promise.then(() => woken.push('second'));
    void third.promise.then(() => woken.push('third'));
    third.leave(); // gave up waiting (its own answer came)
    share.leave('a');
    await Promise.resolve();
    expect(woken).toEqual(['first']);
    share.passOn(); // the socket is still free (the first did not take it): the next in line
    share.leave('b');
    await Promise.resolve();
    expect(woken).toEqual(['first', 'second']);
    expect(share.full()).toEqual([]);
  });

  it('wakes nobody while no socket is free', async () => {
    const share = new WorkerShare(2);
    share.enter('a');
    share.enter('b');
    let woken = false;
    void share.line().promise.then(() => (woken = true));
    share.passOn();
    await Promise.resolve();
    expect(woken).toBe(false);
  });
});
