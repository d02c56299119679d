import type { Logger } from "pino";
import { errorMessage } from "../common/index.js";

/** Anything tenantry starts and must stop. */
export interface Stoppable {
  stop(): Promise<void> | void;
}

/**
 * What tenantry started, in the order it started, so that stopping is the reverse: what started
 * later may read or serve through what started earlier (the cache is first in and last out). One
 * part failing to stop does not keep the others running.
 */
export class Lifecycle {
  private readonly parts: { name: string; part: Stoppable }[] = [];
  private stopping?: Promise<void>;

  constructor(private readonly logger?: Logger) {}

  /** Records a started part (and hands it back), to be stopped before everything started earlier. */
  started<T extends Stoppable>(name: string, part: T): T {
    this.parts.push({ name, part });
    return part;
  }

  /** The parts' names, in starting order. */
  get names(): string[] {
    return this.parts.map((p) => p.name);
  }

  /** Stops every part, the last started first; rejects with the first failure once all were tried. */
  stop(): Promise<void> {
    this.stopping ??= this.stopAll();
    return this.stopping;
  }

  private async stopAll(): Promise<void> {
    let first: unknown;
    for (const { name, part } of [...this.parts].reverse()) {
      try {
        await part.stop();
      } catch (err) {
        this.logger?.error({ part: name, err: errorMessage(err) }, "could not stop");
        first ??= err;
      }
    }
    if (first !== undefined) throw first;
  }
}
