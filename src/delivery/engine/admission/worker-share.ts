import { idleBoundedWait } from './idle-bounded-wait.js';

/** A parked job to promote, and its host. */
export interface Parked {
  jobId: string;
  destination: string;
}

/**
 * One workspace's share of a worker's slots. A workspace may always hold a quarter of them; beyond
 * that it may take more only while another quarter stays free, so a workspace with many slow or dead
 * receivers never leaves the others waiting for a slot. A job over its share waits in process for its
 * workspace's next free slot as long as the workspace keeps freeing slots (a busy workspace with
 * answering receivers never bounces its jobs through Redis, however long its line); it is parked once
 * the workspace has freed none for the wait's time (its receivers hang). Per worker process.
 */
export class WorkerShare {
  private readonly held = new Map<string, number>();
  private readonly queued = new Map<string, (() => void)[]>();
  /** Per workspace, its parked jobs' ids with their hosts (a job's queue is its host's shard). */
  private readonly parked = new Map<string, Map<string, string>>();
  /** When each workspace holding slots last freed one. */
  private readonly freedAt = new Map<string, number>();
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

  /**
   * Waits for one of the workspace's freed slots while the workspace frees one at least every `ms`;
   * true when it got one, false once `ms` passed without the workspace freeing any.
   */
  waitTurn(workspaceId: string, ms: number): Promise<boolean> {
    const queue = this.queued.get(workspaceId) ?? [];
    const { turn, wake } = idleBoundedWait(
      () => this.freedAt.get(workspaceId) ?? 0,
      ms,
      Infinity,
      () => {
        const index = queue.indexOf(wake);
        if (index >= 0) queue.splice(index, 1);
        if (queue.length === 0) this.queued.delete(workspaceId);
        if (!this.held.has(workspaceId) && !this.queued.has(workspaceId)) this.freedAt.delete(workspaceId);
      },
    );
    queue.push(wake);
    this.queued.set(workspaceId, queue);
    return turn;
  }

  /** Gives the slot back: to a job of the workspace waiting in process, else names a parked one to wake. */
  leave(workspaceId: string): Parked | undefined {
    const mine = this.held.get(workspaceId);
    if (mine === undefined) return undefined;
    if (mine <= 1) this.held.delete(workspaceId);
    else this.held.set(workspaceId, mine - 1);
    this.total--;
    if (this.held.has(workspaceId) || this.queued.has(workspaceId)) this.freedAt.set(workspaceId, Date.now());
    else this.freedAt.delete(workspaceId);
    const queue = this.queued.get(workspaceId);
    if (queue?.length && this.allows(workspaceId)) {
      const turn = queue.shift()!;
      if (queue.length === 0) this.queued.delete(workspaceId);
      this.take(workspaceId);
      turn();
      return undefined;
    }
    const next = this.parked.get(workspaceId)?.entries().next().value;
    if (next === undefined) return undefined;
    const [jobId, destination] = next;
    this.forget(workspaceId, jobId);
    return { jobId, destination };
  }

  /** Records a job parked in the queue's delayed set; true if a slot is free for it already. */
  park(workspaceId: string, jobId: string, destination: string): boolean {
    const parked = this.parked.get(workspaceId) ?? new Map<string, string>();
    this.parked.set(workspaceId, parked.set(jobId, destination));
    return this.allows(workspaceId);
  }

  /**
   * The job runs again (it came back by itself, at its own time): no freed slot may promote it any more,
   * or a later wait of the same job (a retry's delay) would be cut short.
   */
  forget(workspaceId: string, jobId: string): void {
    const parked = this.parked.get(workspaceId);
    if (parked?.delete(jobId) && parked.size === 0) this.parked.delete(workspaceId);
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
