const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

export interface StopRequestOptions {
  /**
   * Signals this soon after the first are the same request: a terminal's Ctrl-C reaches the whole
   * foreground process group, and `npm start` passes its own copy on to its script as well.
   */
  sameRequestMs?: number;
  /** Called once when stopping should hurry: a later signal, or {@link StopRequest.hurryNow}. */
  onHurry?: (reason: string) => void;
}

/**
 * Ctrl-C for a command that runs until stopped (`tenantry up`). The first SIGINT, SIGTERM or SIGHUP
 * asks it to stop; one that comes later asks it to hurry (kill what is left instead of waiting for
 * it). While installed, the signals never end the process by themselves, so stopping is never cut
 * short half-way.
 */
export class StopRequest {
  /** Resolves with the first signal. */
  readonly requested: Promise<NodeJS.Signals>;
  private readonly hurryController = new AbortController();
  private firstAt: number | undefined;
  private resolveRequested!: (signal: NodeJS.Signals) => void;
  private readonly listener = (signal: NodeJS.Signals) => this.received(signal);

  constructor(private readonly options: StopRequestOptions = {}) {
    this.requested = new Promise((resolve) => {
      this.resolveRequested = resolve;
    });
    for (const signal of SIGNALS) process.on(signal, this.listener);
  }

  /** Whether a signal came. */
  get isRequested(): boolean {
    return this.firstAt !== undefined;
  }

  /** Aborted when stopping should hurry. */
  get hurry(): AbortSignal {
    return this.hurryController.signal;
  }

  hurryNow(reason: string): void {
    if (this.hurry.aborted) return;
    this.hurryController.abort(reason);
    this.options.onHurry?.(reason);
  }

  /**
   * Stopping is over: a further signal ends the process at once, with status 0 since nothing is left
   * to stop (a signal handler that stayed would leave Ctrl-C ignored while the process ends).
   */
  done(): void {
    for (const signal of SIGNALS) {
      process.off(signal, this.listener);
      process.on(signal, () => process.exit(0));
    }
  }

  private received(signal: NodeJS.Signals): void {
    const now = Date.now();
    if (this.firstAt === undefined) {
      this.firstAt = now;
      this.resolveRequested(signal);
    } else if (now - this.firstAt >= (this.options.sameRequestMs ?? 1000)) {
      this.hurryNow(`${signal} again`);
    }
  }
}

/**
 * Once a command has stopped everything, its process ends by itself when nothing holds the event
 * loop. Should something still hold it after `graceMs` (a handle some part forgot to close), this
 * says what (`process.getActiveResourcesInfo()`) and ends the process, rather than leave a stopped
 * command hanging.
 */
export function endWhenStopped(graceMs = 5000): void {
  setTimeout(() => {
    const held = process.getActiveResourcesInfo().filter((kind) => kind !== "TTYWrap");
    process.stderr.write(
      `warning: still held open ${graceMs / 1000} s after stopping (${held.join(", ") || "nothing known"}); exiting\n`,
    );
    process.exit(Number(process.exitCode ?? 0));
  }, graceMs).unref();
}
