import { open, readFile, rm } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { UserError } from "../common/index.js";

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * An exclusive lock file holding the owner's pid and purpose. A lock whose owner died is stale and
 * taken over; a live owner is waited for (up to `waitMs`), then reported with what it is doing.
 */
export async function acquireLock(
  path: string,
  purpose: string,
  waitMs = 45 * 60_000,
): Promise<() => Promise<void>> {
  const deadline = Date.now() + waitMs;
  let announced = false;
  for (;;) {
    try {
      const handle = await open(path, "wx");
      await handle.writeFile(JSON.stringify({ pid: process.pid, purpose, since: new Date().toISOString() }));
      await handle.close();
      return async () => {
        await rm(path, { force: true });
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    let owner: { pid?: number; purpose?: string } = {};
    try {
      owner = JSON.parse(await readFile(path, "utf8"));
    } catch {
      // Half-written by an owner that crashed right after creating it: treat as stale.
    }
    if (!owner.pid || !isAlive(owner.pid)) {
      await rm(path, { force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new UserError(
        `${path} is held by pid ${owner.pid} (${owner.purpose ?? "unknown"}): wait for it to finish or stop it`,
      );
    }
    if (!announced) {
      process.stderr.write(`waiting for pid ${owner.pid}, which is ${owner.purpose ?? "holding"} ${path}\n`);
      announced = true;
    }
    await sleep(500);
  }
}
