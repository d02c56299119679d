import { existsSync } from "node:fs";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { cacheRoot } from "../../common/index.js";
import { acquireLock } from "../lock.js";

/**
 * Pod networks of process nodes: each local cluster on this machine gets a loopback /16 of its own
 * (127.81.0.0/16, 127.82.0.0/16, …), so pods of two clusters, or of two harnesses run at once by
 * different checkouts, never share an address. On Linux any 127.x.y.z can be bound without setup.
 */
const FIRST_SECOND_OCTET = 81;
const LAST_SECOND_OCTET = 254;

export function podCidrOf(secondOctet: number): string {
  return `127.${secondOctet}.0.0/16`;
}

export function secondOctetOf(cidr: string): number {
  const match = /^127\.(\d{1,3})\.0\.0\/16$/.exec(cidr);
  const octet = match ? Number(match[1]) : Number.NaN;
  if (!(octet >= 1 && octet <= 254)) throw new Error(`"${cidr}" is not a loopback /16 such as 127.81.0.0/16`);
  return octet;
}

/** The n-th usable address of a loopback /16 (n from 0), skipping .0, .1 and .255 of every /24. */
export function addressAt(cidr: string, n: number): string {
  const perBlock = 253; // .2 … .254
  const block = Math.floor(n / perBlock);
  if (!Number.isInteger(n) || n < 0 || block > 255) throw new Error(`no address number ${n} in ${cidr}`);
  return `127.${secondOctetOf(cidr)}.${block}.${(n % perBlock) + 2}`;
}

/** How many pod addresses one process node has. */
export const ADDRESSES_PER_NODE = 256 * 253;

/**
 * Picks pod addresses round-robin, never one in use: a deleted pod's address comes back last, so a
 * client still holding it (a proxy route not yet removed) does not reach the next pod at once.
 */
export class PodAddresses {
  private next = 0;
  private readonly used = new Set<string>();

  constructor(
    readonly cidr: string,
    start = 0,
  ) {
    secondOctetOf(cidr);
    this.next = start % ADDRESSES_PER_NODE;
  }

  /** Marks an address as taken (a pod found running after a restart). */
  reserve(ip: string): void {
    this.used.add(ip);
  }

  release(ip: string): void {
    this.used.delete(ip);
  }

  allocate(): string {
    for (let tried = 0; tried < ADDRESSES_PER_NODE; tried++) {
      const ip = addressAt(this.cidr, this.next);
      this.next = (this.next + 1) % ADDRESSES_PER_NODE;
      if (!this.used.has(ip)) {
        this.used.add(ip);
        return ip;
      }
    }
    throw new Error(`every address of ${this.cidr} is in use`);
  }

  /** Where the next allocation starts, kept across restarts. */
  cursor(): number {
    return this.next;
  }
}

interface Claim {
  clusterDir: string;
  claimedAt: string;
}

/** A claim written in the last minutes belongs to a cluster that may still be starting. */
const FRESH_CLAIM_MS = 5 * 60_000;

function claimsDir(): string {
  return join(cacheRoot(), "process-node-networks");
}

/** The pod network recorded for a cluster folder, if it has one. */
export function recordedPodCidrFile(clusterDir: string): string {
  return join(clusterDir, "process-node", "pod-cidr");
}

/**
 * Claims a loopback /16 for the cluster in `clusterDir`: the one it had before if still its own,
 * else a free one. A claim is free when its cluster folder is gone, holds another network, or its
 * process node is not running (a stopped cluster that loses its network gets a new one at its
 * next start). Claims live in the shared cache folder, under a lock, so concurrent starts anywhere
 * on the machine never pick the same network.
 */
export async function claimPodCidr(
  clusterDir: string,
  isClusterRunning: (clusterDir: string) => Promise<boolean>,
): Promise<string> {
  const dir = claimsDir();
  await mkdir(dir, { recursive: true });
  const release = await acquireLock(join(dir, ".lock"), "claiming a pod network", 60_000);
  try {
    const previous = await readFile(recordedPodCidrFile(clusterDir), "utf8").then(
      (text) => text.trim(),
      () => undefined,
    );
    const candidates: number[] = [];
    if (previous) candidates.push(secondOctetOf(previous));
    for (let octet = FIRST_SECOND_OCTET; octet <= LAST_SECOND_OCTET; octet++)
      if (!candidates.includes(octet)) candidates.push(octet);
    for (const octet of candidates) {
      const file = join(dir, `127.${octet}.json`);
      const claim = await readFile(file, "utf8").then(
        (text) => JSON.parse(text) as Claim,
        () => undefined,
      );
      if (
        claim &&
        claim.clusterDir !== clusterDir &&
        (await claimHeld(claim, podCidrOf(octet), isClusterRunning))
      )
        continue;
      const cidr = podCidrOf(octet);
      await writeFile(
        file,
        JSON.stringify({ clusterDir, claimedAt: new Date().toISOString() } satisfies Claim),
      );
      await mkdir(join(clusterDir, "process-node"), { recursive: true });
      await writeFile(recordedPodCidrFile(clusterDir), `${cidr}\n`);
      return cidr;
    }
    throw new Error(
      `every loopback pod network from 127.${FIRST_SECOND_OCTET}.0.0/16 to 127.${LAST_SECOND_OCTET}.0.0/16 is claimed by a running local cluster (claims in ${dir})`,
    );
  } finally {
    await release();
  }
}

async function claimHeld(
  claim: Claim,
  cidr: string,
  isClusterRunning: (clusterDir: string) => Promise<boolean>,
): Promise<boolean> {
  if (!existsSync(claim.clusterDir)) return false;
  const recorded = await readFile(recordedPodCidrFile(claim.clusterDir), "utf8").catch(() => "");
  if (recorded.trim() !== cidr) return false;
  if (Date.now() - Date.parse(claim.claimedAt) < FRESH_CLAIM_MS) return true;
  return isClusterRunning(claim.clusterDir);
}

/** Gives the cluster's network back (the cluster's folder is being deleted). */
export async function releasePodCidr(clusterDir: string): Promise<void> {
  const recorded = await readFile(recordedPodCidrFile(clusterDir), "utf8").catch(() => "");
  if (!recorded.trim()) return;
  const file = join(claimsDir(), `127.${secondOctetOf(recorded.trim())}.json`);
  const claim = await readFile(file, "utf8").then(
    (text) => JSON.parse(text) as Claim,
    () => undefined,
  );
  if (claim?.clusterDir === clusterDir) await rm(file, { force: true });
}
