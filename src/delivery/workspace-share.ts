/**
 * One workspace's share of a worker's slots. A workspace may always hold a quarter of them; beyond
 * that it may take more only while another quarter stays free, so a workspace with many slow or dead
 * receivers never leaves the others waiting for a slot. In memory: the share is per worker process.
 */
export class WorkspaceShare {
  private readonly held = new Map<string, number>();
  private readonly waiters = new Map<string, string[]>();
  private total = 0;
  private readonly quarter: number;

  constructor(private readonly slots: number) {
    this.quarter = Math.max(1, Math.ceil(slots / 4));
  }

  /** Takes a slot for the workspace if its share allows; false means wait. */
  enter(workspaceId: string): boolean {
    const mine = this.held.get(workspaceId) ?? 0;
    if (mine >= this.quarter && this.slots - this.total <= this.quarter) return false;
    this.held.set(workspaceId, mine + 1);
    this.total++;
    return true;
  }

  /** Gives the slot back; returns a waiting job of the same workspace to wake, if any. */
  leave(workspaceId: string): string | undefined {
    const mine = this.held.get(workspaceId);
    if (mine === undefined) return undefined;
    if (mine <= 1) this.held.delete(workspaceId);
    else this.held.set(workspaceId, mine - 1);
    this.total--;
    const queue = this.waiters.get(workspaceId);
    const next = queue?.shift();
    if (queue?.length === 0) this.waiters.delete(workspaceId);
    return next;
  }

  addWaiter(workspaceId: string, jobId: string): void {
    const queue = this.waiters.get(workspaceId) ?? [];
    if (!queue.includes(jobId)) queue.push(jobId);
    this.waiters.set(workspaceId, queue);
  }
}
