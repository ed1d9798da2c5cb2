interface Pending<I, O> {
  item: I;
  resolve: (out: O) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: items that arrive while `maxConcurrent` runs are in flight wait and go together in
 * the next run (at most `maxBatch` each). Under load, one round trip serves many. Alone, an item runs
 * at once, or with `lingerMs` after waiting that long for company: at a moderate rate runs seldom
 * overlap, so without it every item pays a run's fixed cost alone. `run` answers one output per input,
 * in order.
 */
export class Batcher<I, O> {
  private readonly waiting: Pending<I, O>[] = [];
  private running = 0;
  private lingering: NodeJS.Timeout | undefined;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly maxConcurrent: number,
    private readonly maxBatch: number,
    private readonly lingerMs = 0,
  ) {}

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      // A full batch has no company to wait for; a run that ends meanwhile takes the waiting at once.
      if (this.lingerMs === 0 || this.waiting.length >= this.maxBatch) return this.drain();
      this.lingering ??= setTimeout(() => {
        this.lingering = undefined;
        this.drain();
      }, this.lingerMs);
    });
  }

  private drain(): void {
    while (this.running < this.maxConcurrent && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.maxBatch);
      this.running++;
      this.run(batch.map((p) => p.item))
        .then(
          (outs) => batch.forEach((p, i) => p.resolve(outs[i])),
          (error: unknown) => batch.forEach((p) => p.reject(error)),
        )
        .finally(() => {
          this.running--;
          this.drain();
        });
    }
  }
}
