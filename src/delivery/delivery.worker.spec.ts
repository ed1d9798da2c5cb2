import { WorkspaceShare } from './workspace-share.js';

describe('WorkspaceShare', () => {
  it('lets one workspace alone use all but a quarter of the slots', () => {
    const share = new WorkspaceShare(8);
    const admitted = Array.from({ length: 8 }, () => share.enter('a')).filter(Boolean).length;
    expect(admitted).toBe(6);
  });

  it('keeps a quarter of the slots for other workspaces', () => {
    const share = new WorkspaceShare(8);
    for (let i = 0; i < 6; i++) share.enter('a');
    expect(share.enter('a')).toBe(false);
    expect(share.enter('b')).toBe(true);
    expect(share.enter('c')).toBe(true);
  });

  it('hands a freed slot to a waiting job of the same workspace', () => {
    const share = new WorkspaceShare(4);
    for (let i = 0; i < 3; i++) share.enter('a');
    expect(share.enter('a')).toBe(false);
    share.addWaiter('a', 'job-1');
    expect(share.leave('a')).toBe('job-1');
    expect(share.leave('a')).toBeUndefined();
  });
});
