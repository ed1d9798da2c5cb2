/**
 * One workspace's share of a worker's slots. A workspace may always hold a quarter of them; beyond
 * that it may take more only while another quarter stays free, so a workspace with many slow or dead
 * receivers never leaves the others waiting for a slot. A job over its share first waits briefly in
 * process for its workspace's next free slot (fast receivers free one within milliseconds, so a busy
 * healthy workspace never bounces through Redis); only then is it parked. Per worker process.
 */
export class WorkspaceShare {
  private readonly held = new Map<string, number>();
  private readonly queued = new Map<string, ((admitted: boolean) => void)[]>();
  private readonly parked = new Map<string, string[]>();
  private total = 0;
  private readonly quarter: number;

  constructor(private readonly slots: number) {
    this.quarter = Math.max(1, Math.ceil(slots / 4));
  }

  /** Takes a slot for the workspace if its share allows; false means wait. */
  enter(workspaceId: string): boolean {
    if (!this.allows(workspaceId)) return false;
    this.take(workspaceId);
    return true;
  }

  /** Waits up to `ms` for the workspace's next freed slot; true when it got one. */
  waitTurn(workspaceId: string, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const queue = this.queued.get(workspaceId) ?? [];
      const timer = setTimeout(() => {
        const index = queue.indexOf(turn);
        if (index >= 0) queue.splice(index, 1);
        if (queue.length === 0) this.queued.delete(workspaceId);
        resolve(false);
      }, ms);
      const turn = (admitted: boolean) => {
        clearTimeout(timer);
        resolve(admitted);
      };
      queue.push(turn);
      this.queued.set(workspaceId, queue);
    });
  }

  /** Gives the slot back: to a job of the workspace waiting in process, else names a parked one to wake. */
  leave(workspaceId: string): string | undefined {
    const mine = this.held.get(workspaceId);
    if (mine === undefined) return undefined;
    if (mine <= 1) this.held.delete(workspaceId);
    else this.held.set(workspaceId, mine - 1);
    this.total--;
    const queue = this.queued.get(workspaceId);
    if (queue?.length && this.allows(workspaceId)) {
      const turn = queue.shift()!;
      if (queue.length === 0) this.queued.delete(workspaceId);
      this.take(workspaceId);
      turn(true);
      return undefined;
    }
    const parked = this.parked.get(workspaceId);
    const next = parked?.shift();
    if (parked?.length === 0) this.parked.delete(workspaceId);
    return next;
  }

  /** Records a job parked in the queue's delayed set; true if a slot is free for it already. */
  park(workspaceId: string, jobId: string): boolean {
    const parked = this.parked.get(workspaceId) ?? [];
    if (!parked.includes(jobId)) parked.push(jobId);
    this.parked.set(workspaceId, parked);
    return this.allows(workspaceId);
  }

  private allows(workspaceId: string): boolean {
    const mine = this.held.get(workspaceId) ?? 0;
    return mine < this.quarter || this.slots - this.total > this.quarter;
  }

  private take(workspaceId: string): void {
    this.held.set(workspaceId, (this.held.get(workspaceId) ?? 0) + 1);
    this.total++;
  }
}
