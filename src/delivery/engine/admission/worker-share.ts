/**
 * One workspace's share of a worker's sockets (WORKER_CONCURRENCY). A workspace may always hold a quarter
 * of them; beyond that it may take more only while another quarter stays free, so a workspace with many
 * slow or dead receivers never leaves the others without a socket. Per worker process, across its drains:
 * a drain leaves the workspaces at their share out of its pick (`full`), and its attempts take and give
 * back a socket each; drains that find every socket taken wait in `line`, woken one per socket that comes back.
 */
export class WorkerShare {
  private readonly held = new Map<string, number>();
  private total = 0;
  private readonly quarter: number;
  /** Drains waiting for a socket, in turn: each socket that comes back wakes the first. */
  private readonly waiting = new Set<() => void>();

  constructor(private readonly slots: number) {
    this.quarter = Math.max(1, Math.ceil(slots / 4));
  }

  /** Sockets free in this worker. */
  get free(): number {
    return this.slots - this.total;
  }

  /** Takes a socket for the workspace if its share allows; false means not now. */
  enter(workspaceId: string): boolean {
    if (!this.allows(workspaceId)) return false;
    this.held.set(workspaceId, (this.held.get(workspaceId) ?? 0) + 1);
    this.total++;
    return true;
  }

  /** Gives a socket back, and tells the drains waiting for one. */
  leave(workspaceId: string): void {
    const mine = this.held.get(workspaceId);
    if (mine === undefined) return;
    if (mine <= 1) this.held.delete(workspaceId);
    else this.held.set(workspaceId, mine - 1);
    this.total--;
    this.passOn();
  }

  /** The workspaces that may take no more now. */
  full(): string[] {
    if (this.free > this.quarter) return [];
    return [...this.held.keys()].filter((workspaceId) => !this.allows(workspaceId));
  }

  /** A place in line for a socket: `promise` resolves at this drain's turn; `leave` once done waiting. */
  line(): { promise: Promise<void>; leave: () => void } {
    let wake!: () => void;
    const promise = new Promise<void>((resolve) => (wake = resolve));
    this.waiting.add(wake);
    return { promise, leave: () => this.waiting.delete(wake) };
  }

  /** Wakes the first drain in line, when a socket is free for it. */
  passOn(): void {
    if (this.free <= 0) return;
    const [first] = this.waiting;
    if (!first) return;
    this.waiting.delete(first);
    first();
  }

  private allows(workspaceId: string): boolean {
    const mine = this.held.get(workspaceId) ?? 0;
    return this.total < this.slots && (mine < this.quarter || this.slots - this.total > this.quarter);
  }
}
