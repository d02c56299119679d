import { createServer } from "node:net";
import { UserError } from "../common/index.js";

/** Ports handed out by this process and not yet bound by their component; never handed out twice. */
const handedOut = new Set<number>();

function tryListen(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(undefined));
    server.listen({ port, host: "127.0.0.1", exclusive: true }, () => {
      const address = server.address();
      const bound = typeof address === "object" && address ? address.port : undefined;
      server.close(() => resolve(bound));
    });
  });
}

/**
 * A loopback port that is free now, chosen by the kernel so that two harnesses on one machine do
 * not collide. A component may still lose a race for it; callers retry a start that fails with
 * "address already in use".
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await tryListen(0);
    if (port && !handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error("no free loopback port found after 50 attempts");
}

export function releasePort(port: number): void {
  handedOut.delete(port);
}

export async function isPortFree(port: number): Promise<boolean> {
  return (await tryListen(port)) === port;
}

export async function assertPortFree(port: number, what: string): Promise<void> {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new UserError(`${what}: port must be a whole number from 1 to 65535, got ${port}`);
  }
  if (!(await isPortFree(port))) {
    throw new UserError(
      `${what}: port ${port} on 127.0.0.1 is already in use; choose another port or leave it out to pick a free one`,
    );
  }
}
