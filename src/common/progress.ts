/**
 * Progress of a long operation on stderr: a bar redrawn in place on a terminal, and a plain
 * line every few percent (or every 15 s) otherwise, so CI logs stay short but show life.
 */
export interface Progress {
  update(done: number, total: number, detail?: string): void;
  log(line: string): void;
  finish(summary: string): void;
}

export function createProgress(label: string, stream: NodeJS.WriteStream = process.stderr): Progress {
  const interactive = stream.isTTY === true && process.env.CI !== "true";
  const started = Date.now();
  let lastPercent = -1;
  let lastPrinted = 0;
  let drawn = false;

  const elapsed = () => {
    const seconds = (Date.now() - started) / 1000;
    // Tenths matter for the short operations (peer, offload); whole seconds for builds.
    return `${seconds.toFixed(seconds < 60 ? 1 : 0)}s`;
  };

  const clear = () => {
    if (interactive && drawn) {
      stream.write("\r\x1b[2K");
      drawn = false;
    }
  };

  return {
    update(done, total, detail = "") {
      const fraction = total > 0 ? Math.min(done / total, 1) : 0;
      const percent = Math.floor(fraction * 100);
      if (interactive) {
        const width = 30;
        const filled = Math.round(fraction * width);
        const bar = `${"█".repeat(filled)}${"░".repeat(width - filled)}`;
        const text = `${label} ${bar} ${String(percent).padStart(3)}% ${done}/${total} ${detail} (${elapsed()})`;
        stream.write(`\r\x1b[2K${text.slice(0, (stream.columns ?? 120) - 1)}`);
        drawn = true;
        return;
      }
      const now = Date.now();
      if (percent >= lastPercent + 10 || now - lastPrinted > 15_000) {
        stream.write(`${label}: ${percent}% (${done}/${total}) ${detail} after ${elapsed()}\n`);
        lastPercent = percent;
        lastPrinted = now;
      }
    },
    log(line) {
      clear();
      stream.write(`${line}\n`);
    },
    finish(summary) {
      clear();
      stream.write(`${label}: ${summary} in ${elapsed()}\n`);
    },
  };
}
