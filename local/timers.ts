/**
 * The simulated providers' timed work: receipts due later, and answers held back (`hang` rules). `close` cancels
 * what is not due yet, releases every hang, and waits for the work already running.
 */
export class SimulatedTimers {
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly running = new Set<Promise<unknown>>();
  private readonly hangs = new Set<{ timer: NodeJS.Timeout; release: () => void }>();

  /** Runs `task` after `ms`; its failure is swallowed (the caller's task reports its own). */
  later(ms: number, task: () => Promise<unknown>): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      const run = task()
        .catch(() => undefined)
        .finally(() => this.running.delete(run));
      this.running.add(run);
    }, ms);
    this.timers.add(timer);
  }

  /** Resolves after `ms`, or at once when closed. */
  hang(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const entry = { timer: setTimeout(() => (this.hangs.delete(entry), resolve()), ms), release: resolve };
      this.hangs.add(entry);
    });
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const hang of this.hangs) {
      clearTimeout(hang.timer);
      hang.release();
    }
    this.hangs.clear();
    await Promise.allSettled([...this.running]);
  }
}
