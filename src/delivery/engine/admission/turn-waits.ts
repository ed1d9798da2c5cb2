import { idleBoundedWait } from './idle-bounded-wait.js';

/**
 * Jobs turned away at their host that wait in this worker for the release giving them their turn, instead
 * of parking in the queue's delayed set at once. A parked job costs three queue scripts (park, promote,
 * fetch) and, with one workspace in line (no slot kept for it), often loses its turn to a job fetched
 * meanwhile and parks again. A waiter keeps waiting while its host frees slots here at least every
 * `idleMs` (a busy host with answering receivers); a host that frees none (hanging receivers) sends its
 * waiters to park, and so does `longestMs` of waiting (a wake that never came: Admission then finds the
 * turn by the job's place in line). At most `most` jobs wait at once, so most of the worker's slots
 * still fetch and park, and the queue keeps moving past one host's backlog. Per worker process; another
 * worker's release reaches a waiter here through Admission.
 */
export class TurnWaits {
  private readonly waiters = new Map<string, () => void>();
  /** Per host with waiters here: how many, and when it last freed a slot here. */
  private readonly hosts = new Map<string, { waiters: number; releasedAt: number }>();

  constructor(
    private readonly most: number,
    private readonly idleMs: number,
    private readonly longestMs: number,
  ) {}

  /**
   * Waits for the job's turn; true when it was given (wake), false at once when `most` jobs wait already,
   * or once the host has freed no slot here for `idleMs`, or after `longestMs`.
   */
  wait(jobId: string, destination: string): Promise<boolean> {
    if (this.waiters.size >= this.most || this.waiters.has(jobId)) return Promise.resolve(false);
    const host = this.hosts.get(destination) ?? { waiters: 0, releasedAt: Date.now() };
    host.waiters++;
    this.hosts.set(destination, host);
    const end = () => {
      this.waiters.delete(jobId);
      if (--host.waiters === 0) this.hosts.delete(destination);
    };
    const { turn, wake } = idleBoundedWait(() => host.releasedAt, this.idleMs, this.longestMs, end);
    this.waiters.set(jobId, () => {
      end();
      wake();
    });
    return turn;
  }

  /** One of the host's slots was freed here: its waiters' turns are coming. */
  released(destination: string): void {
    const host = this.hosts.get(destination);
    if (host) host.releasedAt = Date.now();
  }

  /** Gives the job its turn if it waits here; false when it does not (parked, elsewhere, or gone). */
  wake(jobId: string): boolean {
    const wake = this.waiters.get(jobId);
    wake?.();
    return wake !== undefined;
  }
}
