/**
 * Group commit: requests for the same key that arrive while a write is in flight are decided
 * together in the next write. Under contention this costs one read and one compare-and-swap per
 * batch instead of one per request, so latency stays flat as concurrency grows.
 */
export class GroupCommitter<Request, Decision> {
  private readonly pending = new Map<
    string,
    { request: Request; resolve: (d: Decision) => void; reject: (e: unknown) => void }[]
  >();
  private readonly running = new Set<string>();

  /** `commit` decides a whole batch, in order, and persists it; it may be called again on retry. */
  constructor(private readonly commit: (key: string, requests: Request[]) => Promise<Decision[]>) {}

  submit(key: string, request: Request): Promise<Decision> {
    return new Promise<Decision>((resolve, reject) => {
      const queue = this.pending.get(key) ?? [];
      queue.push({ request, resolve, reject });
      this.pending.set(key, queue);
      if (!this.running.has(key)) void this.drain(key);
    });
  }

  private async drain(key: string): Promise<void> {
    this.running.add(key);
    try {
      for (;;) {
        const batch = this.pending.get(key) ?? [];
        this.pending.delete(key);
        if (batch.length === 0) return;
        try {
          const decisions = await this.commit(
            key,
            batch.map((b) => b.request),
          );
          for (const [i, b] of batch.entries()) b.resolve(decisions[i]!);
        } catch (err) {
          for (const b of batch) b.reject(err);
        }
      }
    } finally {
      this.running.delete(key);
    }
  }
}
