interface Pending<I, O> {
  item: I;
  resolve: (out: O) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: items that arrive while `maxConcurrent` runs are in flight wait and go together in
 * the next run (at most `maxBatch` each). Alone, an item runs at once; under load, one round trip
 * serves many. `run` answers one output per input, in order.
 */
export class Batcher<I, O> {
  private readonly waiting: Pending<I, O>[] = [];
  private running = 0;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly maxConcurrent: number,
    private readonly maxBatch: number,
  ) {}

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.drain();
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
